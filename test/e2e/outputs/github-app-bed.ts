// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest } from "./pull-request.ts";

export const REPO = PR_PAYLOAD.repository.full_name;
export const OWNER = REPO.split("/")[0]!;
/** in the default App's installation beside REPO: what a token restricted to REPO must not reach */
export const SIBLING = `${OWNER}/sibling`;
/** its installation's tokens live four minutes: inside svc's five-minute renewal margin */
export const SHORT_LIVED = `${OWNER}/short-lived`;
export const APP_ID = 4242;
export const PRINCIPAL_APP_ID = 5151;
const GITHUB_SECRET = "e2e-app-github-secret";

export function rsaKeyPair(): { privateKey: string; publicKey: string } {
  return generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
}

export interface AppBed {
  github: FakeGitHub;
  pool: pg.Pool;
  url: string;
  /** where the setup step of `pull_request.reopened` leaves what it saw */
  out: string;
  /** the two Apps' private keys (what nothing may leak) */
  keys: string[];
  /** the configuration directory and the environment the daemon runs with */
  dir: string;
  env: Record<string, string>;
  /** a signed `pull_request` delivery for `repo` with `action`; the trigger id */
  deliver(action: string, repo?: string): Promise<string>;
  stop(): Promise<void>;
}

/** the agent: leaves what GH_TOKEN it was given (none expected) in `out`, answers `result` */
function agent(out: string, result: unknown): string {
  return `#!/bin/sh\ncat > /dev/null\nprintf %s "\${GH_TOKEN:-none}" > ${out}/agent-gh-token\necho '${JSON.stringify(result)}'\n`;
}

const COMMENT_SCHEMA = `result:
  schema:
    type: object
    properties:
      first: { $ref: svc://schemas/codehost/comment/v1 }
      second: { $ref: svc://schemas/codehost/comment/v1 }
    required: [first, second]
`;

/**
 * A real ingress and worker whose daemon.yaml names GitHub Apps only (no token anywhere), against
 * the fake GitHub in App mode, which knows the Apps by their public keys alone. Pipelines:
 * `pull_request.opened` posts two comments as the default App; `.reopened` runs a setup step (what
 * it holds is written to `out`, and it tries to post and to read a sibling repository with it);
 * `.edited` posts as the App principal `reviewer`.
 */
export async function startAppBed(adminDatabaseUrl: string): Promise<AppBed> {
  const defaultApp = rsaKeyPair();
  const principalApp = rsaKeyPair();
  const database: TestDatabase = await createTestDatabase(adminDatabaseUrl);
  const github = await startFakeGitHub({
    users: {},
    // readable by any token of its installation that is not restricted to another repository
    repos: { [SIBLING]: { repository: { full_name: SIBLING, private: true }, pulls: [] } },
    apps: [
      {
        id: APP_ID,
        slug: "svc-app",
        publicKey: defaultApp.publicKey,
        installations: [
          { id: 77, account: OWNER, repos: [REPO, SIBLING] },
          { id: 78, account: OWNER, repos: [SHORT_LIVED], tokenLifetimeMs: 4 * 60_000 },
        ],
      },
      {
        id: PRINCIPAL_APP_ID,
        slug: "svc-reviewer",
        publicKey: principalApp.publicKey,
        installations: [{ id: 91, account: OWNER, repos: [REPO] }],
      },
    ],
  });
  const out = await mkdtemp(join(tmpdir(), "svc-e2e-app-out-"));
  const api = github.url;
  const dir = await writeConfigDir(
    {
      "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  two-comments: { runtime: command, command: ["./bin/two"], timeout: 30s }
ask:
  targets: [two-comments]
codehost:
  api_url: ${api}
  app:
    id: \${GITHUB_APP_ID}
    private_key: "\${GITHUB_APP_PRIVATE_KEY}"
  principals:
    reviewer:
      app: { id: ${PRINCIPAL_APP_ID}, private_key: "\${REVIEWER_APP_PRIVATE_KEY}" }
`,
      "agents/bot/PERSONA.md": "---\nname: bot\ndescription: Comments.\n---\nYou comment.\n",
      "bin/two": agent(out, { first: { body: "First note." }, second: { body: "Second note." } }),
      "pipelines/two-comments.yaml": `version: 1.0.0
agent: bot
trigger:
  codehost: [pull_request.opened]
targets: [two-comments]
instructions: Comment twice.
${COMMENT_SCHEMA}outputs:
  first: { handler: codehost.comment }
  second: { handler: codehost.comment }
`,
      "pipelines/setup-token.yaml": `version: 1.0.0
agent: bot
trigger:
  codehost: [pull_request.reopened]
targets: [two-comments]
instructions: Comment twice.
setup:
  - run: |
      printf %s "$GH_TOKEN" > ${out}/token
      echo "holding $GH_TOKEN now"
      curl -s -o /dev/null -w '%{http_code}' -X POST -H "authorization: token $GH_TOKEN" -d '{"body":"pwned"}' ${api}/repos/${REPO}/issues/${PR_PAYLOAD.number}/comments > ${out}/post-status
      curl -s -o /dev/null -w '%{http_code}' -H "authorization: token $GH_TOKEN" ${api}/repos/${SIBLING} > ${out}/sibling-status
${COMMENT_SCHEMA}outputs:
  first: { handler: codehost.comment }
  second: { handler: codehost.comment }
`,
      "pipelines/as-reviewer.yaml": `version: 1.0.0
agent: bot
trigger:
  codehost: [pull_request.edited]
targets: [two-comments]
instructions: Comment twice.
principals:
  reviewer: codehost.principal.reviewer
principal: reviewer
${COMMENT_SCHEMA}outputs:
  first: { handler: codehost.comment }
  second: { handler: codehost.comment }
`,
    },
    ["bin/two"],
  );
  const env = {
    ...{ SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, GITHUB_SECRET },
    GITHUB_APP_ID: String(APP_ID),
    GITHUB_APP_PRIVATE_KEY: defaultApp.privateKey,
    REVIEWER_APP_PRIVATE_KEY: principalApp.privateKey,
  };
  const { role: ingress, url } = await startIngress(env);
  let worker: RoleProcess | undefined;
  try {
    worker = await startWorkerProcess(env);
  } catch (error) {
    await ingress.stop();
    throw error;
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    ...{ github, pool, url, out, dir, env },
    keys: [defaultApp.privateKey, principalApp.privateKey],
    async deliver(action, repo = REPO) {
      const repository = { ...PR_PAYLOAD.repository, full_name: repo, name: repo.split("/")[1] };
      const payload = { ...PR_PAYLOAD, action, repository };
      const response = await postSignedPullRequest(url, GITHUB_SECRET, payload);
      if (response.status !== 202)
        throw new Error(`the ingress answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { trigger: string }).trigger;
    },
    async stop() {
      await worker?.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await rm(dir, { recursive: true, force: true });
      await rm(out, { recursive: true, force: true });
    },
  };
}
