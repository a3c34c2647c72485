import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { buildOpenApi, DEFAULT_RESPONSE, openApiPath, renderOpenApi } from "../../../ingress/api/openapi.ts";
import { API_ROUTES } from "../../../ingress/api/routes.ts";
import type { RouteSpec } from "../../../ingress/api/types.ts";

const DOC = join(import.meta.dirname, "../../../docs/openapi.json");

type Operation = {
  security: Record<string, string[]>[];
  parameters?: { name: string; in: string }[];
  responses: Record<string, { description: string }>;
  "x-svc-scope"?: string;
};

function operation(document: Record<string, unknown>, route: RouteSpec): Operation | undefined {
  const paths = document.paths as Record<string, Record<string, Operation>>;
  return paths[openApiPath(route.path).path]?.[route.method.toLowerCase()];
}

describe("the OpenAPI document", () => {
  it("docs/openapi.json is the generated document (run `node ingress/api/openapi.ts` after changing routes)", async () => {
    expect(await readFile(DOC, "utf8")).toBe(renderOpenApi());
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await validate(buildOpenApi() as never);
    expect(result.valid ? "" : compileErrors(result)).toBe("");
    expect(result.valid).toBe(true);
  });

  it("lists every route of the route table with its scope as the security requirement", () => {
    const document = buildOpenApi();
    for (const route of API_ROUTES) {
      const op = operation(document, route);
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      const expected =
        route.scope === "authenticated"
          ? []
          : [
              route.scope === "host:execute:<name>" ? "host:execute:{name}" : route.scope,
              ...(route.alsoScope ? [route.alsoScope] : []),
            ];
      expect(op!.security).toEqual([{ bearer: expected }]);
      expect(op!["x-svc-scope"]).toBe(route.scope);
      const pathParams = (op!.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
      expect(pathParams).toEqual(openApiPath(route.path).parameters);
    }
  });

  it("gives a route that declares no answer the default description", () => {
    const bare = API_ROUTES.find((route) => !route.response);
    expect(bare).toBeDefined();
    const op = operation(buildOpenApi(), bare!);
    expect(op!.responses["200"]!.description).toBe(DEFAULT_RESPONSE);
    const described = API_ROUTES.find((route) => route.path === "/trace/:id")!;
    expect(operation(buildOpenApi(), described)!.responses["200"]!.description).toBe(
      described.response!.description,
    );
  });

  it("describes /health and /openapi.json without a scope and /metrics with admin", () => {
    const paths = buildOpenApi().paths as Record<string, Record<string, Operation>>;
    expect(paths["/health"]!.get!.security).toEqual([]);
    expect(paths["/openapi.json"]!.get!.security).toEqual([]);
    expect(paths["/metrics"]!.get!.security).toContainEqual({ bearer: ["admin"] });
  });
});
