// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { waitFor } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import { type FakeGitHub, type HostedRepo, startFakeGitHub } from "./fake-github.ts";

/**
 * A real ingress and worker on a fresh database, publishing to the loopback GitHub fake, for the
 * sticky-comment and finding tests. Agents are `command` targets that wait until the test hands
 * them their result: `release(agent, result)` writes it where the waiting agent takes it.
 */
export const HOOK_TOKEN = "e2e-sticky-hook-token";
export const CODEHOST_TOKEN = "ghs_stickyDefaultIdentity0001";
export const PUBLIC_URL = "https://svc.example.test";
export const REPO = "acme/widgets";
export const SECRETS = [HOOK_TOKEN, CODEHOST_TOKEN];

/** Two hunks far apart: a push that changes the first leaves the second's findings standing. */
export const FILES_V1 = [
  {
    filename: "src/app.js",
    status: "modified",
    patch:
      '@@ -1,3 +1,3 @@\n import x from "x";\n-let name = 1;\n+let nm = 1;\n export {};\n@@ -20,3 +20,4 @@ export function main() {\n const a = 1;\n+const c = b();\n return a;\n }',
  },
];
export const FILES_V2 = [
  {
    filename: "src/app.js",
    status: "modified",
    patch:
      '@@ -1,3 +1,3 @@\n import x from "x";\n-let name = 1;\n+let count = 1;\n export {};\n@@ -20,3 +20,4 @@ export function main() {\n const a = 1;\n+const c = b();\n return a;\n }',
  },
];

/** Prints the result the test hands over (a file moved into place), or exits 3 when it says FAIL. */
function waitingAgent(gateDir: string, name: string): string {
  return `#!/bin/sh
cat > /dev/null
while ! mv "${gateDir}/${name}.json" "${gateDir}/${name}.$$" 2>/dev/null; do sleep 0.05; done
if [ "$(cat "${gateDir}/${name}.$$")" = FAIL ]; then echo "the model refused" >&2; exit 3; fi
echo thinking
cat "${gateDir}/${name}.$$"
`;
}

export interface StickyBed {
  github: FakeGitHub;
  pool: pg.Pool;
  worker: RoleProcess;
  ingress: RoleProcess;
  url: string;
  /** hands `agent` its result (a JSON value, or "FAIL" for an agent that exits 3) */
  release(agent: string, result: unknown): Promise<void>;
  fire(hook: string, number: number, sha: string): Promise<string>;
  close(): Promise<void>;
}

export async function startStickyBed(options: {
  agents: string[];
  /** pipeline name → its file's body after `version`/`agent` */
  pipelines: Record<string, string>;
  hooks: string[];
  users?: Record<string, string>;
  /**
   * repositories in daemon.yaml's `repos`, checked out from `cloneUrl` (a local mirror), and what
   * the loopback GitHub answers for each (`GET /repos/...`, its pull requests)
   */
  repos?: Record<string, { hosted: HostedRepo; cloneUrl: string }>;
  /** a `github` source of `verify: codehost`, for pipelines with `trigger.codehost` */
  codehostSource?: boolean;
  /** the worker's slots (`worker.concurrency`); 2 unless given */
  concurrency?: number;
}): Promise<StickyBed> {
  const database: TestDatabase = await createTestDatabase(inject("adminDatabaseUrl"));
  const gateDir = await mkdtemp(join(tmpdir(), "svc-sticky-gate-"));
  const github = await startFakeGitHub({
    users: { [CODEHOST_TOKEN]: "svc-bot", ...options.users },
    repos: Object.fromEntries(Object.entries(options.repos ?? {}).map(([name, repo]) => [name, repo.hosted])),
  });
  const codehostSource = options.codehostSource
    ? `\n    github: { verify: codehost, secret: "\${HOOK_TOKEN}" }`
    : "";
  const repos = Object.entries(options.repos ?? {});
  const reposBlock = repos.length
    ? `repos:\n${repos.map(([name, repo]) => `  ${name}: { clone_url: "${repo.cloneUrl}" }`).join("\n")}\n`
    : "";
  const files: Record<string, string> = {
    "daemon.yaml": `server:
  public_url: ${PUBLIC_URL}
webhooks:
  sources:
${options.hooks.map((hook) => `    ${hook}: { verify: bearer, secret: "\${HOOK_TOKEN}" }`).join("\n")}${codehostSource}
${reposBlock}targets:
${options.agents.map((agent) => `  ${agent}: { runtime: command, command: ["./bin/${agent}"], timeout: 60s }`).join("\n")}
ask:
  targets: [${options.agents[0]}]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  concurrency: ${options.concurrency ?? 2}
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
  };
  for (const agent of options.agents) files[`bin/${agent}`] = waitingAgent(gateDir, agent);
  // a body that states its own version keeps it (a shadow candidate needs another)
  for (const [name, body] of Object.entries(options.pipelines))
    files[`pipelines/${name}.yaml`] =
      `${body.startsWith("version:") ? "" : "version: 3.1.0\n"}agent: reviewer\n${body}`;
  const dir = await writeConfigDir(
    files,
    options.agents.map((agent) => `bin/${agent}`),
  );
  const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, CODEHOST_TOKEN };
  const { role: ingress, url } = await startIngress(env);
  const worker = await startWorkerProcess(env);
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    github,
    pool,
    worker,
    ingress,
    url,
    release: async (agent, result) => {
      const text = result === "FAIL" ? "FAIL" : JSON.stringify(result);
      await writeFile(join(gateDir, `${agent}.tmp`), text);
      await rename(join(gateDir, `${agent}.tmp`), join(gateDir, `${agent}.json`));
    },
    fire: (hook, number, sha) =>
      postWebhook(url, hook, HOOK_TOKEN, {
        repository: { full_name: REPO },
        pull_request: { number, head: { sha, ref: "feature" } },
      }),
    close: async () => {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await rm(dir, { recursive: true, force: true });
      await rm(gateDir, { recursive: true, force: true });
    },
  };
}

/** Waits until the run of `triggerId` is running its agent (its agent task open). */
export async function agentRunning(pool: pg.Pool, triggerId: string): Promise<void> {
  await waitFor(async () => {
    const { rows } = await pool.query(
      `SELECT t.status FROM svc.tasks t JOIN svc.invocations i ON i.id = t.invocation_id
       JOIN svc.workloads w ON w.id = i.workload_id
       WHERE w.trigger_id = $1 AND t.kind = 'agent' AND t.status = 'running'`,
      [triggerId],
    );
    return rows.length > 0;
  }, `the agent of ${triggerId} to run`);
}
