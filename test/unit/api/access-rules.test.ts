import { describe, expect, it } from "vitest";
import { allows, crossesOwnerBoundary, type Principal } from "../../../ingress/auth/principal.ts";

function principal(scopes: string[], sandboxed = false): Principal {
  return { owner: "token:t", scopes, sandboxed, via: "config-token" };
}

describe("scope rules", () => {
  it("a scope grants its own routes only", () => {
    expect(allows(principal(["triggers:read"]), "triggers:read")).toBe(true);
    expect(allows(principal(["triggers:read"]), "admin")).toBe(false);
    expect(allows(principal(["admin"]), "workloads:read")).toBe(false);
  });

  it("`*` grants everything, host tools included", () => {
    for (const scope of ["admin", "workloads:write", "mcp:write", "host:execute:lint", "authenticated"]) {
      expect(allows(principal(["*"]), scope)).toBe(true);
    }
  });

  it("one unknown scope makes the whole token match nothing", () => {
    for (const scopes of [
      ["pipelines:*"],
      ["agents:*"],
      ["*", "agents:*"],
      ["triggers:read", "triggers:raed"],
    ]) {
      for (const scope of ["triggers:read", "admin", "authenticated", "host:execute:lint"]) {
        expect(allows(principal(scopes), scope), `${scopes} → ${scope}`).toBe(false);
      }
      expect(crossesOwnerBoundary(principal(scopes))).toBe(false);
    }
  });

  it("host:execute:<name> names exactly one tool, and mcp:write does not imply it", () => {
    expect(allows(principal(["host:execute:lint"]), "host:execute:lint")).toBe(true);
    expect(allows(principal(["host:execute:lint"]), "host:execute:deploy")).toBe(false);
    expect(allows(principal(["mcp:write"]), "host:execute:lint")).toBe(false);
    expect(allows(principal(["mcp:write"]), "mcp:read")).toBe(true);
    expect(allows(principal(["mcp:read"]), "mcp:write")).toBe(false);
  });

  it("a sandboxed agent's token is refused for host tools whatever its scopes", () => {
    expect(allows(principal(["*"], true), "host:execute:lint")).toBe(false);
    expect(allows(principal(["host:execute:lint"], true), "host:execute:lint")).toBe(false);
    expect(allows(principal(["*"], true), "triggers:read")).toBe(true);
  });

  it("only workloads:admin and * cross the owner boundary", () => {
    expect(crossesOwnerBoundary(principal(["workloads:admin"]))).toBe(true);
    expect(crossesOwnerBoundary(principal(["*"]))).toBe(true);
    expect(crossesOwnerBoundary(principal(["admin", "workloads:read", "workloads:write"]))).toBe(false);
  });
});
