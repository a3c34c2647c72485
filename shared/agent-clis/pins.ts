import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The agent CLIs svc runs as runtimes: their npm package and the command they install. */
export const AGENT_CLIS = {
  "claude-code": { package: "@anthropic-ai/claude-code", command: "claude" },
  codex: { package: "@openai/codex", command: "codex" },
} as const;

export type AgentCliRuntime = keyof typeof AGENT_CLIS;

/**
 * The one place the CLI versions are pinned: the agent image installs from it, the tests install
 * exactly these versions, and `svc doctor` compares what is installed against it.
 */
export const VERSIONS_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "deploy",
  "images",
  "agent",
  "versions.json",
);

/** The pinned version of each agent CLI package, by npm package name. */
export function pinnedVersions(file = VERSIONS_FILE): Record<string, string> {
  const pins = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  for (const [name, version] of Object.entries(pins)) {
    if (typeof version !== "string") throw new Error(`${file}: the pin of ${name} must be a version string`);
  }
  return pins as Record<string, string>;
}

export function pinnedVersion(runtime: AgentCliRuntime, file = VERSIONS_FILE): string {
  const name = AGENT_CLIS[runtime].package;
  const version = pinnedVersions(file)[name];
  if (!version) throw new Error(`${file} pins no version of ${name}`);
  return version;
}
