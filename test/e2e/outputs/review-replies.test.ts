// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest, THREAD } from "./pull-request.ts";

const GITHUB_SECRET = "e2e-replies-github-secret";
const CODEHOST_TOKEN = "ghs_repliesDefaultIdentity01";
const PULL = `/repos/${PR_PAYLOAD.repository.full_name}/pulls/${PR_PAYLOAD.number}`;

function agent(result: unknown): string {
  return `#!/bin/sh\ncat > /dev/null\necho '${JSON.stringify(result)}'\n`;
}

/**
 * The contract's two reply handlers, published by a real worker to a loopback GitHub: one pull
 * request delivery fires a pipeline answering one review comment (`codehost.review-comment-reply`)
 * and one answering several (`codehost.review-replies`). Each reply is posted once to GitHub's
 * reply route for its comment, as the default identity, with the pipeline's footer and marker; a
 * reply whose answer was lost is found by its marker on the retry and not posted twice.
 */
describe("publishing review comment replies", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let github: FakeGitHub;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  reply-agent: { runtime: command, command: ["./bin/reply"], timeout: 30s }
  replies-agent: { runtime: command, command: ["./bin/replies"], timeout: 30s }
ask:
  targets: [reply-agent]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
`,
        "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
        "bin/reply": agent({ reply: { in_reply_to: 501, body: "Fixed in the next commit." } }),
        "bin/replies": agent({
          answers: {
            replies: [
              { in_reply_to: 502, body: "Renamed." },
              { in_reply_to: 503, body: "Kept on purpose: see the README." },
            ],
          },
        }),
        "pipelines/one-reply.yaml": `version: 3.1.0
agent: reviewer
trigger:
  codehost: [pull_request.opened]
targets: [reply-agent]
instructions: Answer the review comment.
result:
  schema:
    type: object
    properties:
      reply: { $ref: svc://schemas/codehost/review-comment-reply/v1 }
    required: [reply]
outputs:
  reply: { handler: codehost.review-comment-reply }
`,
        "pipelines/many-replies.yaml": `version: 3.2.0
agent: reviewer
trigger:
  codehost: [pull_request.opened]
targets: [replies-agent]
instructions: Answer every review comment.
result:
  schema:
    type: object
    properties:
      answers: { $ref: svc://schemas/codehost/review-replies/v1 }
    required: [answers]
outputs:
  answers: { handler: codehost.review-replies }
`,
      },
      ["bin/reply", "bin/replies"],
    );
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, GITHUB_SECRET, CODEHOST_TOKEN };
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("posts each reply once to its comment's reply route, stamped, and adopts one whose answer was lost", async () => {
    // the first post of the reply to 503 reaches GitHub, but its answer does not reach the worker
    github.loseAnswerOnce("/comments/503/replies");
    const response = await postSignedPullRequest(url, GITHUB_SECRET, PR_PAYLOAD);
    expect(response.status).toBe(202);
    const id = ((await response.json()) as { trigger: string }).trigger;
    expect((await waitForTrigger(pool, id)).status).toBe("completed");

    const posts = github.requests.filter((request) => request.method === "POST");
    expect(posts.map((post) => post.path).sort()).toEqual([
      `${PULL}/comments/501/replies`,
      `${PULL}/comments/502/replies`,
      `${PULL}/comments/503/replies`,
    ]);
    expect(new Set(posts.map((post) => post.authorization))).toEqual(new Set([`token ${CODEHOST_TOKEN}`]));
    // the lost answer was looked for by its marker before anything was posted again
    expect(
      github.requests.some((request) => request.method === "GET" && request.path === `${PULL}/comments`),
    ).toBe(true);

    const replies = github.replies.get(THREAD) ?? [];
    const byComment = new Map(replies.map((reply) => [reply.in_reply_to_id, reply.body]));
    expect([...byComment.keys()].sort()).toEqual([501, 502, 503]);
    expect(byComment.get(501)).toMatch(/^Fixed in the next commit\.\n\n---\n<sub>.*3\.1\.0.*<\/sub>\n<!-- /s);
    expect(byComment.get(502)).toMatch(/^Renamed\.\n\n---\n<sub>.*3\.2\.0.*<\/sub>\n<!-- /s);
    expect(byComment.get(503)).toMatch(/^Kept on purpose: see the README\.\n\n---\n<sub>.*3\.2\.0/s);
    expect(replies.every((reply) => reply.user.login === "svc-bot")).toBe(true);

    const { invocations } = await lineage(pool, id);
    expect(invocations.map((row) => row.status)).toEqual(["completed", "completed"]);
    const { rows } = await pool.query(
      `SELECT d.output_key, d.status FROM svc.output_deliveries d JOIN svc.invocations i ON i.id = d.invocation_id
        JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1 ORDER BY d.output_key`,
      [id],
    );
    expect(rows).toEqual([
      { output_key: "answers[0]", status: "sent" },
      { output_key: "answers[1]", status: "sent" },
      { output_key: "reply", status: "sent" },
    ]);
  }, 90_000);
});
