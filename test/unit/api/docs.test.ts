import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderGenerated } from "../../../ingress/api/docs.ts";
import { API_ROUTES } from "../../../ingress/api/routes.ts";
import { SCOPES } from "../../../shared/scopes.ts";

const DOC = join(import.meta.dirname, "../../../docs/api.md");

describe("docs/api.md", () => {
  it("holds the section generated from the route table (run `node ingress/api/docs.ts` after changing routes)", async () => {
    expect(await readFile(DOC, "utf8")).toContain(renderGenerated());
  });

  it("lists every route and every scope of the vocabulary", () => {
    const text = renderGenerated();
    for (const route of API_ROUTES) expect(text).toContain(`| ${route.method} | \`${route.path}\` |`);
    for (const scope of [...SCOPES, "host:execute:<name>"]) expect(text).toContain(`| \`${scope}\` |`);
  });

  it("every route but the identity check needs a scope of the vocabulary", () => {
    for (const route of API_ROUTES) {
      if (route.scope === "authenticated") continue;
      expect([...SCOPES, "host:execute:<name>"]).toContain(route.scope);
    }
  });
});
