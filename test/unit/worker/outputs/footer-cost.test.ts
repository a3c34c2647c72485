import { describe, expect, it } from "vitest";
import { dollars, footerLine, stampBody } from "../../../../worker/outputs/render.ts";

const STAMP = {
  pipeline: "pr-review",
  version: "2.0.0",
  origin: "trg_abcdefgh",
  invocation: "inv_qrstuvwx",
  seal: "Sx7Qm2Kd9Lp4Vn8A",
};

describe("the footer's spend", () => {
  it("adds the run's tokens, and its cost when a target had a price, on the same short line", () => {
    expect(footerLine({ ...STAMP, usage: { tokens: 12_345, costUsd: 0.0412 } })).toBe(
      "pr-review 2.0.0 · trg_abcdefgh · 12,345 tokens · $0.04",
    );
    expect(footerLine({ ...STAMP, usage: { tokens: 12_345, costUsd: null } })).toBe(
      "pr-review 2.0.0 · trg_abcdefgh · 12,345 tokens",
    );
    expect(stampBody("Done.", { ...STAMP, usage: { tokens: 1, costUsd: null } }, "summary")).toContain(
      "<sub>pr-review 2.0.0 · trg_abcdefgh · 1 token</sub>",
    );
  });

  it("says nothing of spend for a run that used no model through the gateway (a command agent)", () => {
    expect(footerLine({ ...STAMP, usage: { tokens: 0, costUsd: null } })).toBe(
      "pr-review 2.0.0 · trg_abcdefgh",
    );
  });

  it("shows cents, and a run cheaper than a cent as such", () => {
    expect(dollars(1.5)).toBe("$1.50");
    expect(dollars(0.0042)).toBe("$0.0042");
    expect(dollars(0.00001)).toBe("<$0.0001");
  });
});
