import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../ingress/api/errors.ts";
import { gateArgs } from "../../../ingress/api/pipeline-args.ts";
import { pipeline } from "../../support/pipeline.ts";

const nightly = pipeline("nightly", {
  args: { label: { type: "string", required: true }, limit: { type: "number", required: false } },
});

function problem(args: unknown): string {
  try {
    gateArgs(nightly, args);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    return (error as ApiError).message;
  }
  throw new Error("accepted");
}

describe("fire args gated by declared args", () => {
  it("accepts declared args of the declared types", () => {
    expect(gateArgs(nightly, { label: "bug", limit: 3 })).toEqual({ label: "bug", limit: 3 });
    expect(gateArgs(nightly, { label: "bug" })).toEqual({ label: "bug" });
  });

  it("names undeclared args, wrong types and missing required args", () => {
    expect(problem({ label: "x", color: "red" })).toContain(
      '"color" is not declared by pipelines/nightly.yaml (declared: label, limit)',
    );
    expect(problem({ label: 5 })).toContain('"label" must be a string');
    expect(problem({})).toContain('"label" is required');
    expect(problem([1])).toContain('"args" must be an object');
    expect(problem({ label: "x", limit: Number.NaN })).toContain('"limit" must be a number');
  });

  it("never lets an undeclared name through", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1 }), fc.jsonValue()), (extra) => {
        const args = { label: "x", ...extra };
        let out: Record<string, unknown> | undefined;
        try {
          out = gateArgs(nightly, args);
        } catch (error) {
          expect(error).toBeInstanceOf(ApiError);
          return;
        }
        for (const key of Object.keys(out)) expect(["label", "limit"]).toContain(key);
      }),
    );
  });
});
