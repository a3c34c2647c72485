import { readFile, writeFile } from "node:fs/promises";
import { SCOPES } from "../../shared/scopes.ts";
import { AUTHENTICATED, IMPLIED_SCOPES } from "../auth/principal.ts";
import { API_ROUTES, REMOVED_ROUTES } from "./routes.ts";

/**
 * Renders the generated part of docs/api.md from the route table, so the document lists exactly
 * the routes and scopes the router enforces. `node ingress/api/docs.ts` rewrites the file; a unit
 * test fails while the file is stale.
 */
export const BEGIN_MARKER = "<!-- BEGIN GENERATED: routes and scopes (node ingress/api/docs.ts) -->";
export const END_MARKER = "<!-- END GENERATED -->";

const GRANTS: Record<string, string> = {
  "workloads:read":
    "read workloads, their invocations and run artifacts (own workloads only), and every note (notes are not owner-bound)",
  "workloads:write": "create and close workloads, submit and cancel invocations (own workloads only)",
  "workloads:admin":
    "cross-owner workload access, and trusting an outsider's note (never a run token); includes workloads:read and workloads:write",
  "triggers:read": "list and inspect triggers, read `/trace` lineage and what runs cost (`/costs`)",
  "pipelines:invoke":
    "fire a pipeline, replay a trigger, dispatch a URL, run a schedule now, rehearse a pull request with outputs held back",
  "knowledge:read": "`POST /ask` and the knowledge listing",
  "repos:read": "the configured repos and their pull requests",
  "evals:write": "list and curate evals, read eval statistics and cohort comparisons",
  admin: "drain, queue status, resume, reconcile, purge, doctor probes; does not cross the owner boundary",
  "*": "every scope, including both owner-boundary scopes and every host:execute:<name>",
  "mcp:read": "open the tool protocol and call its read tools (`search_notes`, `read_note`, `get_trace`)",
  "mcp:write": "call the tool protocol's write tools (`submit_note`); includes mcp:read",
  "host:execute:<name>":
    "call host tool `<name>` (`host_<name>` over `/mcp`, or `POST /host-tools/:name`); `*` also allows it, `mcp:write` does not; never a sandboxed run's token",
};

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

export function renderGenerated(): string {
  const lines: string[] = [BEGIN_MARKER, "", "### Routes", ""];
  lines.push("| Method | Path | Scope | Owner-bound | What |", "| --- | --- | --- | --- | --- |");
  for (const route of API_ROUTES) {
    const scope =
      route.scope === AUTHENTICATED
        ? "any valid token"
        : `\`${route.scope}\`${route.alsoScope ? ` and \`${route.alsoScope}\`` : ""}`;
    lines.push(
      `| ${route.method} | \`${route.path}\` | ${scope} | ${route.ownerBound ? "yes" : ""} | ${cell(route.summary)} |`,
    );
  }
  lines.push("", "Removed (answer `404`):", "");
  for (const removed of REMOVED_ROUTES)
    lines.push(`- \`${removed.method} ${removed.path}\` → use \`${removed.replacement}\``);
  lines.push("", "### Scopes", "", "| Scope | Grants | Routes |", "| --- | --- | --- |");
  const vocabulary = [...SCOPES.filter((scope) => scope !== "*"), "host:execute:<name>", "*"];
  for (const scope of vocabulary) {
    const routes = API_ROUTES.filter(
      (route) =>
        scope === "*" ||
        route.scope === scope ||
        route.alsoScope === scope ||
        (IMPLIED_SCOPES[scope]?.includes(route.scope) ?? false),
    ).map((route) => `\`${route.method} ${route.path}\``);
    const listed = scope === "*" ? "all" : routes.join(", ") || "none yet";
    lines.push(`| \`${scope}\` | ${cell(GRANTS[scope] ?? "")} | ${listed} |`);
  }
  lines.push("", END_MARKER);
  return lines.join("\n");
}

export function spliceGenerated(document: string): string {
  const start = document.indexOf(BEGIN_MARKER);
  const end = document.indexOf(END_MARKER);
  if (start < 0 || end < start)
    throw new Error(`docs/api.md lacks the markers ${BEGIN_MARKER} … ${END_MARKER}`);
  return document.slice(0, start) + renderGenerated() + document.slice(end + END_MARKER.length);
}

if (import.meta.main) {
  const path = new URL("../../docs/api.md", import.meta.url);
  await writeFile(path, spliceGenerated(await readFile(path, "utf8")));
}
