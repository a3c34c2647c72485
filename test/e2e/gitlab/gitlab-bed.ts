// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitLab, type FakeProject, startFakeGitLab } from "./fake-gitlab.ts";

/**
 * A real ingress and worker on a fresh database, taking GitLab's webhook deliveries (`verify:
 * gitlab`) and publishing to the loopback GitLab (fake-gitlab.ts) as `codehost.kind: gitlab`. The
 * payloads are GitLab's documented examples with the project, merge request and users of the
 * test. Agents are `command` targets that wait until the test hands them their result.
 */
export const HOOK_TOKEN = "e2e-gitlab-hook-secret-5b1c";
export const GITLAB_TOKEN = "glpat-e2eSvcBotToken000001";
export const PROJECT = "acme/widgets";
export const PROJECT_ID = 42;
export const BOT = { id: 7, username: "svc-bot" };
export const DEVELOPER = { id: 30, username: "dev" };
export const STRANGER = { id: 99, username: "stranger" };
export const SECRETS = [HOOK_TOKEN, GITLAB_TOKEN];
/** the tokens people write their notes with on the fake, as they would in GitLab's web page */
export const PEOPLE_TOKENS = { dev: "glpat-developerOwn0000001", stranger: "glpat-strangerOwn00000001" };

const FIXTURES = join(import.meta.dirname, "../../../ingress/webhooks/gitlab/fixtures");
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));

export const SHA1 = "1111111111111111111111111111111111111111";
export const SHA2 = "2222222222222222222222222222222222222222";
export const BASE = "0000000000000000000000000000000000000abc";

/** Two hunks far apart in src/app.js: lines 2 (added) and 21 (added), 1 and 20 context. */
export const DIFF_V1 =
  '@@ -1,3 +1,3 @@\n import x from "x";\n-let name = 1;\n+let nm = 1;\n export {};\n@@ -20,3 +20,4 @@ export function main() {\n const a = 1;\n+const c = b();\n return a;\n }\n';
/** The first hunk changed again; the second hunk as it was. */
export const DIFF_V2 =
  '@@ -1,3 +1,3 @@\n import x from "x";\n-let name = 1;\n+let count = 1;\n export {};\n@@ -20,3 +20,4 @@ export function main() {\n const a = 1;\n+const c = b();\n return a;\n }\n';

export function project(overrides: Partial<FakeProject> = {}): FakeProject {
  return {
    id: PROJECT_ID,
    path_with_namespace: PROJECT,
    visibility: "private",
    members: { [BOT.id]: 30, [DEVELOPER.id]: 30 },
    mergeRequests: [
      {
        iid: 5,
        author_id: DEVELOPER.id,
        source_branch: "feature",
        target_branch: "main",
        diff_refs: { base_sha: BASE, start_sha: BASE, head_sha: SHA1 },
        diffs: [{ old_path: "src/app.js", new_path: "src/app.js", diff: DIFF_V1 }],
      },
    ],
    ...overrides,
  };
}

/** GitLab's documented merge request payload about this test's project and merge request. */
export function mergeRequestPayload(options: {
  sha: string;
  action?: string;
  author?: { id: number; username: string };
  oldrev?: string;
  fork?: boolean;
  iid?: number;
}): Record<string, unknown> {
  const body = fixture("merge-request.json");
  const attributes = body.object_attributes as Record<string, unknown>;
  const author = options.author ?? DEVELOPER;
  return {
    ...body,
    user: { ...(body.user as object), id: author.id, username: author.username },
    project: { ...(body.project as object), id: PROJECT_ID, path_with_namespace: PROJECT },
    object_attributes: {
      ...attributes,
      iid: options.iid ?? 5,
      author_id: author.id,
      action: options.action ?? "open",
      source_branch: "feature",
      target_branch: "main",
      source_project_id: options.fork ? 4242 : PROJECT_ID,
      target_project_id: PROJECT_ID,
      last_commit: { ...(attributes.last_commit as object), id: options.sha },
      ...(options.oldrev ? { oldrev: options.oldrev } : {}),
    },
  };
}

/** GitLab's documented note payload: note `noteId`, `text`, written on the merge request by `author`. */
export function notePayload(
  text: string,
  author: { id: number; username: string },
  noteId = 9001,
): Record<string, unknown> {
  const body = fixture("note-merge-request.json");
  const note = body.object_attributes as Record<string, unknown>;
  const request = body.merge_request as Record<string, unknown>;
  return {
    ...body,
    user: { ...(body.user as object), id: author.id, username: author.username },
    project: { ...(body.project as object), id: PROJECT_ID, path_with_namespace: PROJECT },
    object_attributes: { ...note, id: noteId, note: text, author_id: author.id, action: "create" },
    merge_request: {
      ...request,
      iid: 5,
      source_branch: "feature",
      target_branch: "main",
      source_project_id: PROJECT_ID,
      target_project_id: PROJECT_ID,
      last_commit: { ...(request.last_commit as object), id: SHA1 },
    },
  };
}

/** Prints the result the test hands over (a file moved into place). */
function waitingAgent(gateDir: string, name: string): string {
  return `#!/bin/sh
cat > /dev/null
while ! mv "${gateDir}/${name}.json" "${gateDir}/${name}.$$" 2>/dev/null; do sleep 0.05; done
cat "${gateDir}/${name}.$$"
`;
}

export interface GitlabBed {
  gitlab: FakeGitLab;
  pool: pg.Pool;
  dir: string;
  url: string;
  /** hands `agent` its result */
  release(agent: string, result: unknown): Promise<void>;
  /** writes a note on merge request 5 as a person would (with their own token); its id */
  write(token: string, text: string): Promise<number>;
  /** delivers a payload as GitLab does: its secret token, its event header, a fresh event UUID */
  deliver(payload: Record<string, unknown>, hook: string): Promise<string>;
  close(): Promise<void>;
}

export async function startGitlabBed(options: {
  agents: string[];
  /** pipeline name → its file's body after `version`/`agent` */
  pipelines: Record<string, string>;
  projects?: FakeProject[];
  /** daemon.yaml lines added at the top level (e.g. `repos:`) */
  daemon?: string;
  git?: { handle(req: IncomingMessage, res: ServerResponse): boolean };
  /** agent name → its script, instead of one that waits for `release` (runs any number of times) */
  scripts?: Record<string, string>;
}): Promise<GitlabBed> {
  const database: TestDatabase = await createTestDatabase(inject("adminDatabaseUrl"));
  const gateDir = await mkdtemp(join(tmpdir(), "svc-gitlab-gate-"));
  const gitlab = await startFakeGitLab({
    tokens: {
      [GITLAB_TOKEN]: { ...BOT, bot: true, scopes: ["api"] },
      [PEOPLE_TOKENS.dev]: { ...DEVELOPER, scopes: ["api"] },
      [PEOPLE_TOKENS.stranger]: { ...STRANGER, scopes: ["api"] },
    },
    projects: options.projects ?? [project()],
    ...(options.git ? { git: options.git } : {}),
  });
  const files: Record<string, string> = {
    "daemon.yaml": `server:
  public_url: https://svc.example.test
webhooks:
  sources:
    gitlab: { verify: gitlab, secret: "\${HOOK_TOKEN}" }
targets:
${options.agents.map((agent) => `  ${agent}: { runtime: command, command: ["./bin/${agent}"], timeout: 60s }`).join("\n")}
ask:
  targets: [${options.agents[0]}]
codehost:
  kind: gitlab
  api_url: ${gitlab.apiUrl}
  token: \${GITLAB_TOKEN}
worker:
  concurrency: 2
${options.daemon ?? ""}`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
  };
  for (const agent of options.agents)
    files[`bin/${agent}`] = options.scripts?.[agent] ?? waitingAgent(gateDir, agent);
  // a body that states its own version keeps it (a shadow candidate needs another)
  for (const [name, body] of Object.entries(options.pipelines))
    files[`pipelines/${name}.yaml`] =
      `${body.startsWith("version:") ? "" : "version: 2.0.0\n"}agent: reviewer\n${body}`;
  const dir = await writeConfigDir(
    files,
    options.agents.map((agent) => `bin/${agent}`),
  );
  const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOOK_TOKEN, GITLAB_TOKEN };
  const { role: ingress, url }: { role: RoleProcess; url: string } = await startIngress(env);
  const worker = await startWorkerProcess(env);
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    gitlab,
    pool,
    dir,
    url,
    release: async (agent, result) => {
      await writeFile(join(gateDir, `${agent}.tmp`), JSON.stringify(result));
      await rename(join(gateDir, `${agent}.tmp`), join(gateDir, `${agent}.json`));
    },
    write: async (token, text) => {
      const response = await fetch(
        `${gitlab.apiUrl}/projects/${encodeURIComponent(PROJECT)}/merge_requests/5/notes`,
        {
          method: "POST",
          headers: { "content-type": "application/json", "private-token": token },
          body: JSON.stringify({ body: text }),
        },
      );
      if (response.status !== 201)
        throw new Error(`the note answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { id: number }).id;
    },
    deliver: async (payload, hook) => {
      const response = await fetch(`${url}/webhooks/gitlab`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-gitlab-token": HOOK_TOKEN,
          "x-gitlab-event": hook,
          "x-gitlab-event-uuid": randomUUID(),
        },
        body: JSON.stringify(payload),
      });
      if (response.status !== 202)
        throw new Error(`delivery answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { trigger: string }).trigger;
    },
    close: async () => {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await gitlab.close();
      await rm(dir, { recursive: true, force: true });
      await rm(gateDir, { recursive: true, force: true });
    },
  };
}
