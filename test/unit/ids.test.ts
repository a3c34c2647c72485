import { describe, expect, it } from "vitest";
import { isId, newId } from "../../shared/ids.ts";

describe("ids", () => {
  it("carries the kind prefix and 20 lowercase base32 characters", () => {
    const id = newId("trigger");
    expect(id).toMatch(/^trg_[a-z2-7]{20}$/);
    expect(isId(id)).toBe(true);
  });

  it("does not share prefixes between ids made in the same instant", () => {
    const ids = Array.from({ length: 1000 }, () => newId("invocation").slice(0, 10));
    expect(new Set(ids).size).toBeGreaterThan(990);
  });
});
