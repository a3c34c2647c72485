import { readFile, writeFile } from "node:fs/promises";
import packageJson from "../../package.json" with { type: "json" };
import { AUTHENTICATED } from "../auth/principal.ts";
import { API_ROUTES } from "./routes.ts";
import { type JsonSchema, SCHEMAS } from "./schemas.ts";
import type { RouteSpec } from "./types.ts";

/**
 * The OpenAPI 3.1 document of the daemon, generated from the route table (routes.ts) plus the few
 * routes the ingress app owns itself. Any route added to the table appears here with its scope as
 * a security requirement; one that declares no `response` gets DEFAULT_RESPONSE. `GET /openapi.json`
 * serves it; `node ingress/api/openapi.ts` rewrites docs/openapi.json, which a test keeps in step.
 */
export const DEFAULT_RESPONSE = "the route's JSON answer (fields listed in docs/api.md)";

const ERROR = { $ref: "#/components/schemas/Error" };
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ERROR } },
});

/** Routes of the ingress app itself (not in the route table): no scope, or their own auth. */
const APP_OPERATIONS: Record<string, Record<string, unknown>> = {
  "/": {
    get: {
      operationId: "get_root",
      summary: "service name and version",
      security: [],
      responses: { "200": jsonResponse("service name and version") },
    },
  },
  "/health": {
    get: {
      operationId: "get_health",
      summary: "liveness: answers 503 while the database is unreachable",
      security: [],
      responses: {
        "200": jsonResponse("the ingress and its database answer"),
        "503": errorResponse("database unreachable"),
      },
    },
  },
  "/openapi.json": {
    get: {
      operationId: "get_openapi",
      summary: "this document",
      security: [],
      responses: { "200": jsonResponse("the OpenAPI 3.1 document") },
    },
  },
  "/metrics": {
    get: {
      operationId: "get_metrics",
      summary: "Prometheus exposition of this ingress; the `metrics.token` of daemon.yaml or scope admin",
      security: [{ bearer: ["admin"] }, { metricsToken: [] }],
      "x-svc-scope": "admin",
      responses: {
        "200": {
          description: "Prometheus text format",
          content: { "text/plain": { schema: { type: "string" } } },
        },
        "401": errorResponse("no valid token"),
        "403": errorResponse("the token lacks the scope admin"),
      },
    },
  },
  "/webhooks/{name}": {
    post: {
      operationId: "post_webhooks_name",
      summary: "deliver an event to webhook source <name>; verified by the source's own scheme",
      security: [],
      parameters: [pathParameter("name")],
      requestBody: { required: true, content: { "application/json": { schema: {} } } },
      responses: {
        "202": jsonResponse("stored; `{ trigger }` names the new trigger"),
        "401": errorResponse("verification failed (identical answer for every cause)"),
        "503": errorResponse("the database is unreachable; nothing was stored"),
      },
    },
  },
};

function jsonResponse(description: string, schema: JsonSchema = { type: "object" }) {
  return { description, content: { "application/json": { schema } } };
}

function pathParameter(name: string) {
  return { name, in: "path", required: true, schema: { type: "string" } };
}

/** `/triggers/:id` → `/triggers/{id}` and its parameter names. */
export function openApiPath(path: string): { path: string; parameters: string[] } {
  const parameters: string[] = [];
  const converted = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string) => {
    parameters.push(name);
    return `{${name}}`;
  });
  return { path: converted, parameters };
}

/** The scopes a route needs (all of them) as the security requirement's roles; `authenticated` needs only a token. */
export function securityOf(route: RouteSpec): Record<string, string[]>[] {
  if (route.scope === AUTHENTICATED) return [{ bearer: [] }];
  const first = route.scope === "host:execute:<name>" ? "host:execute:{name}" : route.scope;
  return [{ bearer: route.alsoScope ? [first, route.alsoScope] : [first] }];
}

function operationOf(route: RouteSpec, parameters: string[]): Record<string, unknown> {
  const response = route.response;
  const schema = response?.schema ? { $ref: `#/components/schemas/${response.schema}` } : { type: "object" };
  const operation: Record<string, unknown> = {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[/:]+/g, "_")}`,
    summary: route.summary,
    security: securityOf(route),
    "x-svc-scope": route.scope,
    ...(route.alsoScope ? { "x-svc-also-scope": route.alsoScope } : {}),
    ...(route.ownerBound ? { "x-svc-owner-bound": true } : {}),
    parameters: [
      ...parameters.map(pathParameter),
      ...Object.entries(route.query ?? {}).map(([name, description]) => ({
        name,
        in: "query",
        required: false,
        description,
        schema: { type: "string" },
      })),
    ],
    responses: {
      // a 204 carries no body, so it describes no content
      [String(response?.status ?? 200)]:
        response?.status === 204
          ? { description: response.description }
          : jsonResponse(response?.description ?? DEFAULT_RESPONSE, schema),
      "400": errorResponse("the request is invalid; the message names the fix"),
      "401": errorResponse("no valid token"),
      "403": errorResponse(`the token lacks the scope the route needs`),
      "404": errorResponse("no such record (or another owner's)"),
      // every route but a GET reads its body as JSON (ingress/api/router.ts, parseBody)
      ...(route.method === "GET"
        ? {}
        : { "415": errorResponse("a body sent with a Content-Type other than application/json") }),
      "503": errorResponse("the database is unreachable"),
    },
  };
  if (route.method === "POST" || route.method === "PATCH") {
    operation.requestBody = {
      required: false,
      content: { "application/json": { schema: route.body ?? { type: "object" } } },
    };
  }
  return operation;
}

export function buildOpenApi(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = structuredClone(APP_OPERATIONS);
  for (const route of API_ROUTES) {
    const { path, parameters } = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operationOf(route, parameters);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "svc daemon API",
      version: packageJson.version,
      description:
        "Generated from the route table (ingress/api/routes.ts). Each operation's security requirement names the scope it needs; `x-svc-scope` repeats it.",
    },
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "a configured, issued or broker token; the requirement's role is the scope the route needs",
        },
        metricsToken: {
          type: "http",
          scheme: "bearer",
          description: "the scraper token `metrics.token` of daemon.yaml; valid for GET /metrics only",
        },
      },
    },
  };
}

export function renderOpenApi(): string {
  return `${JSON.stringify(buildOpenApi(), null, 2)}\n`;
}

if (import.meta.main) {
  const path = new URL("../../docs/openapi.json", import.meta.url);
  const text = renderOpenApi();
  if ((await readFile(path, "utf8").catch(() => "")) !== text) await writeFile(path, text);
}
