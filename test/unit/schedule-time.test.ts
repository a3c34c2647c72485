import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { cronProblem, firesAt, latestFiring, nextFiring, timezoneKnown } from "../../shared/schedule-time.ts";

const BERLIN = "Europe/Berlin";
const at = (iso: string) => new Date(iso);
const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The firings after `from`, one after the other, as instants. */
function walk(cron: string, tz: string, from: string, count: number): string[] {
  const out: string[] = [];
  let after = at(from);
  for (let i = 0; i < count; i++) {
    after = nextFiring(cron, tz, after);
    out.push(after.toISOString());
  }
  return out;
}

describe("next run in Europe/Berlin across the DST changes (fixed clocks)", () => {
  it("March 29 2026: 02:30 does not exist, so the daily 02:30 is skipped that day", () => {
    // cron-parser alone answers 03:30 local (01:30Z) for that day
    expect(walk("30 2 * * *", BERLIN, "2026-03-27T12:00:00Z", 3)).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-30T00:30:00.000Z", // 02:30 CEST: the 29th has none
      "2026-03-31T00:30:00.000Z",
    ]);
    expect(iso(nextFiring("30 2 * * *", BERLIN, at("2026-03-28T23:59:00Z")))).toBe(
      "2026-03-30T00:30:00.000Z",
    );
  });

  it("March 29 2026: a time after the gap fires at its local time in the new offset", () => {
    expect(walk("15 3 * * *", BERLIN, "2026-03-28T00:00:00Z", 3)).toEqual([
      "2026-03-28T02:15:00.000Z", // 03:15 CET
      "2026-03-29T01:15:00.000Z", // 03:15 CEST
      "2026-03-30T01:15:00.000Z",
    ]);
  });

  it("hourly across the spring gap: 01:00, then 03:00 (02:00 does not exist)", () => {
    expect(walk("0 * * * *", BERLIN, "2026-03-28T23:30:00Z", 3)).toEqual([
      "2026-03-29T00:00:00.000Z", // 01:00 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST
      "2026-03-29T02:00:00.000Z", // 04:00 CEST
    ]);
  });

  it("October 25 2026: 02:30 occurs twice and fires once, the first time", () => {
    expect(walk("30 2 * * *", BERLIN, "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST; 01:30Z (02:30 CET) is the repeat
      "2026-10-26T01:30:00.000Z", // 02:30 CET
    ]);
    expect(firesAt("30 2 * * *", BERLIN, at("2026-10-25T00:30:00Z"))).toBe(true);
    expect(firesAt("30 2 * * *", BERLIN, at("2026-10-25T01:30:00Z"))).toBe(false);
  });

  it("hourly across the autumn repeat: 02:00 fires once, 03:00 follows", () => {
    // cron-parser alone answers both 00:00Z and 01:00Z (02:00 CEST and 02:00 CET)
    expect(walk("0 * * * *", BERLIN, "2026-10-24T23:30:00Z", 3)).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T02:00:00.000Z", // 03:00 CET
      "2026-10-25T03:00:00.000Z",
    ]);
  });

  it("the latest firing (what a job or a catch-up fires) keeps the same rules looking back", () => {
    // just after the repeated 02:30 CET, the latest firing is the first 02:30
    expect(
      iso(latestFiring("30 2 * * *", BERLIN, at("2026-10-25T01:31:00Z"), at("2026-10-24T00:00:00Z"))),
    ).toBe("2026-10-25T00:30:00.000Z");
    // within 90 s of the repeat there is nothing left to fire
    expect(
      latestFiring("30 2 * * *", BERLIN, at("2026-10-25T01:30:30Z"), at("2026-10-25T01:29:00Z")),
    ).toBeNull();
    // just after the spring gap: the 28th's 02:30 is the latest; the shifted 03:30 is no firing
    expect(
      iso(latestFiring("30 2 * * *", BERLIN, at("2026-03-29T01:31:00Z"), at("2026-03-27T00:00:00Z"))),
    ).toBe("2026-03-28T01:30:00.000Z");
    expect(firesAt("30 2 * * *", BERLIN, at("2026-03-29T01:30:00Z"))).toBe(false);
    // a tick exactly at `until` counts; one at `after` does not
    expect(
      iso(latestFiring("* * * * *", "UTC", at("2026-01-01T00:05:00Z"), at("2026-01-01T00:04:00Z"))),
    ).toBe("2026-01-01T00:05:00.000Z");
    expect(
      latestFiring("*/10 * * * *", "UTC", at("2026-01-01T00:09:59Z"), at("2026-01-01T00:00:00Z")),
    ).toBeNull();
  });

  it("UTC has no gap and no repeat", () => {
    expect(walk("30 2 * * *", "UTC", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T02:30:00.000Z",
      "2026-03-30T02:30:00.000Z",
    ]);
  });
});

describe("what cron-parser (and so pg-boss's pass) answers on its own, which the rules above correct", () => {
  const parse = (cron: string, currentDate: string) =>
    CronExpressionParser.parse(cron, { tz: BERLIN, strict: false, currentDate: new Date(currentDate) });

  it("next() moves the missing 02:30 of March 29 to 03:30 local", () => {
    expect(parse("30 2 * * *", "2026-03-28T12:00:00Z").next().toDate().toISOString()).toBe(
      "2026-03-29T01:30:00.000Z",
    );
  });

  it("prev(), which pg-boss's pass reads, skips the missing time but answers both 02:30s of October 25", () => {
    const back = parse("30 2 * * *", "2026-10-25T03:00:00Z");
    expect([back.prev(), back.prev(), back.prev()].map((d) => d.toDate().toISOString())).toEqual([
      "2026-10-25T01:30:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-24T00:30:00.000Z",
    ]);
    expect(parse("30 2 * * *", "2026-03-29T03:00:00Z").prev().toDate().toISOString()).toBe(
      "2026-03-28T01:30:00.000Z",
    );
  });
});

describe("what the loader checks", () => {
  it("a cron expression has 5 valid fields", () => {
    expect(cronProblem("*/5 * * * *")).toBeUndefined();
    expect(cronProblem("0 3 * * 1-5")).toBeUndefined();
    expect(cronProblem("0 0 3 * * *")).toContain("has 6 fields");
    expect(cronProblem("0 3 * *")).toContain("has 4 fields");
    expect(cronProblem("61 3 * * *")).toBeDefined();
    expect(cronProblem("0 25 * * *")).toBeDefined();
  });

  it("a time zone is an IANA name", () => {
    expect(timezoneKnown("Europe/Berlin")).toBe(true);
    expect(timezoneKnown("UTC")).toBe(true);
    expect(timezoneKnown("Europe/Berln")).toBe(false);
    expect(timezoneKnown("CEST+1")).toBe(false);
  });
});
