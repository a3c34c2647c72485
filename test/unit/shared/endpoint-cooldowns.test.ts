import { describe, expect, it } from "vitest";
import {
  ENDPOINT_COOLDOWN_CAP_MS,
  ENDPOINT_COOLDOWN_FIRST_MS,
  type EndpointAdmission,
  EndpointCooldowns,
} from "../../../shared/models/endpoint-cooldowns.ts";

function call(admission: EndpointAdmission): Extract<EndpointAdmission, { kind: "call" }> {
  if (admission.kind !== "call") throw new Error(`expected a call, got a skip: ${admission.reason}`);
  return admission;
}

describe("model endpoint cool-downs", () => {
  it("a target that answers is never skipped", () => {
    const endpoints = new EndpointCooldowns(() => 0);
    for (let i = 0; i < 5; i += 1) call(endpoints.admit("gpt")).up();
    expect(endpoints.isDown("gpt")).toBe(false);
  });

  it("grows 5 s, 10 s, 20 s... while each probe fails, up to the cap, and a probe that answers clears it", () => {
    let now = 0;
    const endpoints = new EndpointCooldowns(() => now);
    expect(call(endpoints.admit("gpt")).down("ENOTFOUND")).toEqual({ coolingMs: ENDPOINT_COOLDOWN_FIRST_MS });
    const seen: number[] = [ENDPOINT_COOLDOWN_FIRST_MS];
    for (let i = 0; i < 10; i += 1) {
      const cooling = seen.at(-1)!;
      now += cooling - 1;
      expect(endpoints.admit("gpt")).toMatchObject({ kind: "skip" });
      now += 1;
      const probe = call(endpoints.admit("gpt"));
      expect(probe.probe).toBe(true);
      seen.push(probe.down("ETIMEDOUT")!.coolingMs);
    }
    expect(seen.slice(0, 5)).toEqual([5_000, 10_000, 20_000, 40_000, 80_000]);
    expect(seen.at(-1)).toBe(ENDPOINT_COOLDOWN_CAP_MS);
    expect(Math.max(...seen)).toBe(ENDPOINT_COOLDOWN_CAP_MS);
    now += ENDPOINT_COOLDOWN_CAP_MS;
    call(endpoints.admit("gpt")).up();
    expect(endpoints.isDown("gpt")).toBe(false);
    // down again later: the cool-down starts over at the first step
    expect(call(endpoints.admit("gpt")).down("ECONNREFUSED")).toEqual({
      coolingMs: ENDPOINT_COOLDOWN_FIRST_MS,
    });
  });

  it("when a cool-down ends exactly one caller probes; the others skip until the probe settles", () => {
    let now = 0;
    const endpoints = new EndpointCooldowns(() => now);
    call(endpoints.admit("gpt")).down("ECONNREFUSED");
    now = ENDPOINT_COOLDOWN_FIRST_MS;
    const admissions = Array.from({ length: 20 }, () => endpoints.admit("gpt"));
    const probes = admissions.filter((a) => a.kind === "call");
    expect(probes).toHaveLength(1);
    expect(admissions.filter((a) => a.kind === "skip")).toHaveLength(19);
    expect(admissions[1]).toMatchObject({
      kind: "skip",
      reason: "down (ECONNREFUSED); another call is probing it",
    });
    // however long the probe takes, nobody else goes while it is in flight
    now += 60_000;
    expect(endpoints.admit("gpt").kind).toBe("skip");
    call(probes[0]!).up();
    expect(call(endpoints.admit("gpt")).probe).toBe(false);
  });

  it("calls let in before the target went down do not lengthen its cool-down, and each settles once", () => {
    let now = 0;
    const endpoints = new EndpointCooldowns(() => now);
    const inFlight = Array.from({ length: 8 }, () => call(endpoints.admit("gpt")));
    expect(inFlight[0]!.down("ETIMEDOUT")).toEqual({ coolingMs: ENDPOINT_COOLDOWN_FIRST_MS });
    for (const admission of inFlight.slice(1)) expect(admission.down("ETIMEDOUT")).toBeUndefined();
    expect(inFlight[0]!.down("ETIMEDOUT")).toBeUndefined();
    now = ENDPOINT_COOLDOWN_FIRST_MS;
    expect(call(endpoints.admit("gpt")).down("ETIMEDOUT")).toEqual({
      coolingMs: 2 * ENDPOINT_COOLDOWN_FIRST_MS,
    });
  });

  it("targets cool independently", () => {
    const endpoints = new EndpointCooldowns(() => 0);
    call(endpoints.admit("gpt")).down("ENOTFOUND");
    expect(endpoints.admit("gpt").kind).toBe("skip");
    expect(endpoints.admit("local").kind).toBe("call");
  });

  it("a probe that never settles (a lost call) does not hold its target down for ever", () => {
    let now = 0;
    const endpoints = new EndpointCooldowns(() => now);
    call(endpoints.admit("gpt")).down("ENOTFOUND");
    now = ENDPOINT_COOLDOWN_FIRST_MS;
    call(endpoints.admit("gpt"));
    now += ENDPOINT_COOLDOWN_CAP_MS - 1;
    expect(endpoints.admit("gpt").kind).toBe("skip");
    now += 1;
    expect(call(endpoints.admit("gpt")).probe).toBe(true);
  });

  it("a call released without a verdict changes nothing, and a released probe lets the next caller probe", () => {
    let now = 0;
    const endpoints = new EndpointCooldowns(() => now);
    call(endpoints.admit("gpt")).release();
    expect(endpoints.isDown("gpt")).toBe(false);
    call(endpoints.admit("gpt")).down("ETIMEDOUT");
    now = ENDPOINT_COOLDOWN_FIRST_MS;
    const probe = call(endpoints.admit("gpt"));
    expect(endpoints.admit("gpt").kind).toBe("skip");
    probe.release();
    const next = call(endpoints.admit("gpt"));
    expect(next.probe).toBe(true);
    // still the first cool-down's failure count: the next failure doubles it once
    expect(next.down("ETIMEDOUT")).toEqual({ coolingMs: 2 * ENDPOINT_COOLDOWN_FIRST_MS });
  });
});
