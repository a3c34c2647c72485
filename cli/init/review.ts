import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import type { TemplateFile } from "./files.ts";

/** The template's files as they ship: cli/init/templates/review/ (package.json `files` holds cli/). */
const TEMPLATE_DIR = join(import.meta.dirname, "templates", "review");

export const PIPELINE_FILE = "pipelines/pr-review.yaml";
export const PERSONA_FILE = "agents/reviewer/PERSONA.md";
export const DAEMON_FILE = "daemon.yaml";

export interface ReviewAgent {
  /** the target of daemon.yaml the pipeline runs on */
  target: string;
  /** the name of its credential (its model API key) */
  credential: string;
  /** the variable the template's daemon.yaml reads that key from */
  variable: string;
}

export const REVIEW_AGENTS: Record<string, ReviewAgent> = {
  "claude-code": { target: "claude", credential: "anthropic", variable: "ANTHROPIC_API_KEY" },
  codex: { target: "codex", credential: "openai", variable: "OPENAI_API_KEY" },
};

/**
 * Where daemon.yaml's targets read the model API key: `env`, `secret: ${VARIABLE}` from the daemon's
 * environment; `stored`, `secret_ref:` to the secret `svc secret set` stores in the database.
 */
export const CREDENTIAL_SOURCES = ["env", "stored"] as const;
export type CredentialSource = (typeof CREDENTIAL_SOURCES)[number];

/** The stored secret a review agent's targets name with --credential stored: target/<target>/<credential>. */
export function storedCredentialRef(agent: ReviewAgent): string {
  return `target/${agent.target}/${agent.credential}`;
}

/** What each variable the templates' daemon.yaml files read is, for the next steps. */
export const VARIABLES: Record<string, string> = {
  GITHUB_WEBHOOK_SECRET: "the GitHub webhook's secret: a long random string (openssl rand -hex 32)",
  GITHUB_TOKEN: "the GitHub token svc reads and posts reviews as (pull requests, issues: write)",
  ANTHROPIC_API_KEY: "the Anthropic API key of the targets claude and claude-api",
  OPENAI_API_KEY: "the OpenAI API key of the targets codex and openai-api",
};

export const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/**
 * The files of `svc init review` for one agent: the pipeline and its agent's persona, and a
 * daemon.yaml (written only where there is none) with the GitHub source, the code-host token, the
 * agent's target and the sandbox settings. `repos` fill daemon.yaml's `repos:`; `credential` says
 * where the targets read the model API key.
 */
export async function reviewFiles(
  agentName: string,
  repos: readonly string[],
  credential: CredentialSource = "env",
): Promise<TemplateFile[]> {
  const agent = REVIEW_AGENTS[agentName];
  if (!agent) throw new Error(`no review template for the agent ${agentName}`);
  const read = (path: string) => readFile(join(TEMPLATE_DIR, path), "utf8");
  const [pipeline, persona, daemon] = await Promise.all([
    read(PIPELINE_FILE),
    read(PERSONA_FILE),
    read(`daemon.${agentName}.yaml`),
  ]);
  return [
    {
      path: PIPELINE_FILE,
      content: pipeline.replaceAll("__TARGET__", agent.target).replaceAll("__AGENT__", agentName),
    },
    { path: PERSONA_FILE, content: persona },
    {
      path: DAEMON_FILE,
      content: withRepos(credential === "stored" ? withStoredKey(daemon, agent) : daemon, repos),
      keepExisting: true,
    },
  ];
}

/**
 * daemon.yaml with each `secret: ${VARIABLE}` of the agent's API key (its target's and the `svc
 * ask` target's: one key) replaced by `secret_ref:` to the one stored secret. The loader takes the
 * name as it is; the daemon reads and decrypts it when it starts.
 */
function withStoredKey(daemon: string, agent: ReviewAgent): string {
  const inline = `secret: \${${agent.variable}}`;
  const lines = daemon.split("\n");
  let replaced = 0;
  const out = lines.map((line) => {
    if (line.trim() !== inline) return line;
    replaced++;
    const indent = line.slice(0, line.indexOf(inline));
    const comment = replaced === 1 ? "" : `   # the API key of targets.${agent.target}, stored once`;
    return `${indent}secret_ref: ${storedCredentialRef(agent)}${comment}`;
  });
  if (replaced === 0) throw new Error(`the review template's daemon.yaml has no "${inline}" line`);
  return out.join("\n");
}

/** daemon.yaml with one `<owner>/<name>: {}` line per repository right under `repos:`. */
function withRepos(daemon: string, repos: readonly string[]): string {
  if (repos.length === 0) return daemon;
  const lines = daemon.split("\n");
  const at = lines.findIndex((line) => line.startsWith("repos:"));
  if (at < 0) throw new Error("the review template's daemon.yaml has no repos: line");
  lines.splice(at + 1, 0, ...repos.map((repo) => `  ${repo}: {}`));
  return lines.join("\n");
}

/**
 * When an existing daemon.yaml lacks the pipeline's target: the template's block for it, to add
 * under `targets:`. Undefined when the target is there, or when the file does not parse (the
 * validation then says why).
 */
export function missingTargetBlock(existingDaemon: string, templateDaemon: string, target: string) {
  let targets: unknown;
  try {
    targets = (parse(existingDaemon) as { targets?: unknown } | null)?.targets;
  } catch {
    return undefined;
  }
  if (targets && typeof targets === "object" && target in targets) return undefined;
  const lines = templateDaemon.split("\n");
  const start = lines.findIndex((line) => line.startsWith(`  ${target}:`));
  if (start < 0) return undefined;
  let end = start + 1;
  while (end < lines.length && /^( {4}|\s*$)/.test(lines[end]!) && lines[end]!.trim() !== "") end++;
  return lines.slice(start, end).join("\n");
}
