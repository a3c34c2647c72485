// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../ingress/processes.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { type FakeSlack, startFakeSlack } from "./fake-slack.ts";
import { PR_PAYLOAD, postSignedPullRequest, THREAD } from "./pull-request.ts";

const HOOK_TOKEN = "e2e-outputs-hook-token";
const GITHUB_SECRET = "e2e-outputs-github-secret";
const CODEHOST_TOKEN = "ghs_defaultIdentityToken0001";
const REVIEWER_TOKEN = "ghs_reviewerPrincipalToken42";
const CHAT_TOKEN = "xoxb-e2e-releasebot-token";
const SECRETS = [HOOK_TOKEN, GITHUB_SECRET, CODEHOST_TOKEN, REVIEWER_TOKEN, CHAT_TOKEN];

const REVIEW = {
  review: {
    event: "REQUEST_CHANGES",
    body: "Two problems.",
    comments: [
      { path: "src/app.js", line: 11, body: "this call can throw" },
      { path: "src/app.js", line: 10, side: "RIGHT", start_line: 9, body: "rename these" },
      { path: "README.md", line: 40, body: "the README says otherwise" },
    ],
  },
};

const FINDING = (text: string) => new RegExp(`^${text}\n\n<!-- svc:finding:[0-9a-f]{16} -->$`);

function agent(result: unknown): string {
  return `#!/bin/sh\ncat > /dev/null\necho 'thinking'\necho '${JSON.stringify(result)}'\n`;
}

function pipelineFile(body: string): string {
  return `version: 2.0.0\nagent: reviewer\n${body}`;
}

function files(github: FakeGitHub, slack: FakeSlack, metricsPort: number): Record<string, string> {
  return {
    "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
    comment-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    forbidden-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    announce-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    flaky-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    missing-channel-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  review-agent: { runtime: command, command: ["./bin/review"], timeout: 30s }
  comment-agent: { runtime: command, command: ["./bin/comment"], timeout: 30s }
  forbidden-agent: { runtime: command, command: ["./bin/forbidden"], timeout: 30s }
  announce-agent: { runtime: command, command: ["./bin/announce"], timeout: 30s }
ask:
  targets: [comment-agent]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
  principals:
    "42":
      token: \${REVIEWER_TOKEN}
channels:
  chat:
    api_url: ${slack.url}
    bots:
      releasebot: { token: "\${CHAT_BOT_TOKEN}" }
queue:
  circuit_breaker:
    failures: 5
    cooldown: 1h
    escalate:
      chat: { bot: releasebot, channel: C0ALERTS }
worker:
  concurrency: 3
  metrics_port: ${metricsPort}
`,
    "members.yaml": `members:
  - name: reviewer
    kind: agent
    identities:
      codehost: { handle: svc-reviewer }
      chat: { id: U0REVIEW }
  - name: dana
    kind: human
    identities:
      codehost: { handle: dana }
      chat: { id: U0DANA }
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
    "bin/review": agent(REVIEW),
    "bin/comment": agent({ comment: { body: "Build passed." } }),
    "bin/forbidden": agent({ comment: { body: "Cannot land.", repo: "acme/locked", number: 7 } }),
    "bin/announce": agent({
      announcement: {
        text: "Release 2.0 is out, thanks @dana and @stranger",
        blocks: [{ type: "section", text: { type: "mrkdwn", text: "*Release 2.0* by @dana" } }],
      },
    }),
    "pipelines/pr-review.yaml": pipelineFile(`principals:
  pull-request-reviewer: codehost.principal.42
principal: pull-request-reviewer
trigger:
  codehost: [pull_request.opened]
targets: [review-agent]
instructions: Review the pull request.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`),
    "pipelines/pr-comment.yaml": pipelineFile(`trigger:
  webhook: [comment-hook]
targets: [comment-agent]
instructions: Comment on the pull request.
result:
  schema:
    type: object
    properties:
      comment: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  comment: { handler: codehost.comment }
`),
    "pipelines/locked.yaml": pipelineFile(`trigger:
  webhook: [forbidden-hook]
targets: [forbidden-agent]
instructions: Comment somewhere we may not.
result:
  schema:
    type: object
    properties:
      comment: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  # its result names the repository to comment on (issue 55: only with target: any)
  comment: { handler: codehost.comment, target: any }
`),
    "pipelines/announce.yaml": pipelineFile(`trigger:
  webhook: [announce-hook]
targets: [announce-agent]
instructions: Announce the release.
result:
  schema:
    type: object
    properties:
      announcement: { $ref: svc://schemas/chat/message/v1 }
outputs:
  announcement:
    handler: chat.message
    config: { bot: releasebot, channel: C0RELEASE }
`),
    "pipelines/misdirected.yaml": pipelineFile(`trigger:
  webhook: [missing-channel-hook]
targets: [announce-agent]
instructions: Announce it where nobody listens.
result:
  schema:
    type: object
    properties:
      announcement: { $ref: svc://schemas/chat/message/v1 }
outputs:
  announcement:
    handler: chat.message
    config: { bot: releasebot, channel: C0MISSING }
`),
    "pipelines/flaky.yaml": pipelineFile(`trigger:
  webhook: [flaky-hook]
targets: [comment-agent]
setup:
  - run: echo "the build is broken"; exit 3
instructions: never reached
`),
  };
}

describe("outputs: results land on a fake code host and a fake chat API, exactly once", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let github: FakeGitHub;
  let slack: FakeSlack;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let metricsPort: number;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    github = await startFakeGitHub({
      users: { [CODEHOST_TOKEN]: "svc-default", [REVIEWER_TOKEN]: "svc-reviewer" },
      locked: ["acme/locked"],
    });
    github.files.set(THREAD, [
      {
        filename: "src/app.js",
        status: "modified",
        patch:
          "@@ -8,4 +8,5 @@ export function main() {\n const a = 1;\n-const b = 2;\n+const b = 3;\n+const c = b();\n return a;\n }",
      },
      {
        filename: "README.md",
        status: "modified",
        patch: "@@ -1,2 +1,2 @@\n-# Hello\n+# Hello World\n text",
      },
    ]);
    slack = await startFakeSlack({ tokens: [CHAT_TOKEN], channels: ["C0RELEASE", "C0ALERTS"] });
    metricsPort = await freePort();
    dir = await writeConfigDir(files(github, slack, metricsPort), [
      "bin/review",
      "bin/comment",
      "bin/forbidden",
      "bin/announce",
    ]);
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      HOOK_TOKEN,
      GITHUB_SECRET,
      CODEHOST_TOKEN,
      REVIEWER_TOKEN,
      CHAT_BOT_TOKEN: CHAT_TOKEN,
    };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await github?.close();
    await slack?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function postPullRequest(payload: unknown): Promise<string> {
    const response = await postSignedPullRequest(url, GITHUB_SECRET, payload);
    expect(response.status).toBe(202);
    return ((await response.json()) as { trigger: string }).trigger;
  }

  async function deliveries(triggerId: string) {
    const { rows } = await pool.query(
      `SELECT d.* FROM svc.output_deliveries d JOIN svc.invocations i ON i.id = d.invocation_id
       JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1 ORDER BY d.output_key`,
      [triggerId],
    );
    return rows;
  }

  it("a signed pull_request.opened → one review as the principal, inline comments in the diff, the stray one in the body, footer with version", async () => {
    const id = await postPullRequest(PR_PAYLOAD);
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const reviews = github.reviews.get(THREAD) ?? [];
    expect(reviews).toHaveLength(1);
    const [review] = reviews;
    expect(review!.user.login).toBe("svc-reviewer");
    const posts = github.requests.filter((r) => r.method === "POST" && r.path.endsWith("/reviews"));
    expect(posts).toHaveLength(1);
    expect(posts[0]!.authorization).toBe(`token ${REVIEWER_TOKEN}`);
    expect(posts[0]!.path).toBe(
      `/repos/${PR_PAYLOAD.repository.full_name}/pulls/${PR_PAYLOAD.number}/reviews`,
    );
    expect(posts[0]!.body).toMatchObject({
      commit_id: PR_PAYLOAD.pull_request.head.sha,
      event: "REQUEST_CHANGES",
      comments: [
        // each finding carries its fingerprint (docs/outputs.md, "No finding twice")
        {
          path: "src/app.js",
          line: 11,
          side: "RIGHT",
          body: expect.stringMatching(FINDING("this call can throw")),
        },
        {
          path: "src/app.js",
          line: 10,
          side: "RIGHT",
          start_line: 9,
          start_side: "RIGHT",
          body: expect.stringMatching(FINDING("rename these")),
        },
      ],
    });
    const { invocations } = await lineage(pool, id);
    const invocation = invocations[0].id as string;
    expect(review!.body).toContain("Two problems.");
    expect(review!.body).toContain("README.md:40 — the README says otherwise");
    expect(review!.body).toContain(`pr-review 2.0.0 · ${id}`);
    // the marker carries the invocation's seal (db/marker-key.ts), which no one else can write
    expect(review!.body).toMatch(new RegExp(`<!-- svc:${invocation}:review:[A-Za-z0-9_-]{16} -->`));
    // the diff was read first, with the same identity
    const filesRead = github.requests.filter((r) => r.path.endsWith("/files"));
    expect(filesRead.map((r) => r.authorization)).toEqual([`token ${REVIEWER_TOKEN}`]);
    expect(await deliveries(id)).toMatchObject([
      {
        output_key: "review",
        handler: "codehost.review",
        status: "sent",
        attempts: 1,
        remote_url: review!.html_url,
      },
    ]);
    const trace = (await (await fetch(`${url}/trace/${id}`)).json()) as { deliveries: unknown[] };
    expect(trace.deliveries).toEqual([
      {
        invocationId: invocation,
        key: "review",
        handler: "codehost.review",
        status: "sent",
        url: review!.html_url,
        attempts: 1,
        lastError: null,
      },
    ]);
    // the worker's /metrics counts the delivery by handler and status (loopback install: no token)
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain(
      'svc_worker_output_deliveries_total{handler="codehost.review",status="sent"} 1',
    );
  });

  it("the pipeline's own identity opening a pull request is not reviewed", async () => {
    const before = github.reviews.get(THREAD)?.length ?? 0;
    const id = await postPullRequest({
      ...PR_PAYLOAD,
      sender: { ...PR_PAYLOAD.sender, login: "svc-reviewer" },
    });
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    expect(github.reviews.get(THREAD)?.length ?? 0).toBe(before);
    const { tasks } = await lineage(pool, id);
    expect(tasks).toEqual([]);
  });

  it("a 502 answered after the host stored the comment → exactly one comment (the marker is found before retrying)", async () => {
    github.loseAnswerOnce(`/issues/${PR_PAYLOAD.number}/comments`);
    const before = github.comments.get(THREAD)?.length ?? 0;
    const payload = {
      repository: { full_name: PR_PAYLOAD.repository.full_name },
      issue: { number: PR_PAYLOAD.number },
    };
    const id = await postWebhook(url, "comment-hook", HOOK_TOKEN, payload);
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const comments = github.comments.get(THREAD)!;
    expect(comments.length - before).toBe(1);
    const comment = comments.at(-1)!;
    expect(comment.user.login).toBe("svc-default");
    expect(comment.body).toMatch(/^Build passed\.\n\n---\n<sub>pr-comment 2\.0\.0 · trg_/);
    const posts = github.requests.filter((r) => r.method === "POST" && r.path.endsWith("/comments"));
    expect(posts).toHaveLength(1);
    expect(posts[0]!.authorization).toBe(`token ${CODEHOST_TOKEN}`);
    expect(await deliveries(id)).toMatchObject([
      { output_key: "comment", status: "sent", attempts: 1, remote_url: comment.html_url },
    ]);
    await worker.waitForLog((l) => l.event === "output.adopted" && l.key === "comment", "output.adopted");
  });

  it("a 403 → output_failed with the host's message per key, the trigger ends error, no token anywhere", async () => {
    const id = await postWebhook(url, "forbidden-hook", HOOK_TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "output_failed" } });
    const { invocations, artifacts } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({
      code: "output_failed",
      details: [
        {
          code: "output_failed",
          field: "comment",
          metadata: {
            handler: "codehost.comment",
            status: "403",
            hostMessage: "Resource not accessible by integration",
          },
        },
      ],
    });
    expect(await deliveries(id)).toMatchObject([{ output_key: "comment", status: "failed", attempts: 1 }]);
    const everything = [
      JSON.stringify(trigger),
      JSON.stringify(invocations),
      JSON.stringify(artifacts),
      JSON.stringify(await deliveries(id)),
      ...worker.output,
      ...ingress.output,
    ].join("\n");
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
  });

  it("a chat message: text (mentions rendered) + blocks + footer to the configured channel as the bot", async () => {
    const id = await postWebhook(url, "announce-hook", HOOK_TOKEN, {});
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    const messages = slack.messages.filter((m) => m.channel === "C0RELEASE");
    expect(messages).toHaveLength(1);
    const [message] = messages;
    expect(message!.token).toBe(CHAT_TOKEN);
    expect(message!.text).toBe(
      `Release 2.0 is out, thanks <@U0DANA> and @stranger\n_announce 2.0.0 · ${id}_`,
    );
    expect(message!.blocks).toEqual([
      { type: "section", text: { type: "mrkdwn", text: "*Release 2.0* by <@U0DANA>" } },
      { type: "context", elements: [{ type: "mrkdwn", text: `announce 2.0.0 · ${id}` }] },
    ]);
    const { invocations } = await lineage(pool, id);
    expect(message!.metadata).toEqual({
      event_type: "svc_output",
      event_payload: { invocation: invocations[0].id, key: "announcement" },
    });
    expect(await deliveries(id)).toMatchObject([
      {
        output_key: "announcement",
        handler: "chat.message",
        status: "sent",
        remote_url: expect.stringContaining("C0RELEASE"),
      },
    ]);
  });

  it("Slack's ok: false (channel_not_found) is final: output_failed with the chat API's error", async () => {
    const id = await postWebhook(url, "missing-channel-hook", HOOK_TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "error", diagnostic: { code: "output_failed" } });
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic.details).toMatchObject([
      {
        field: "announcement",
        metadata: { handler: "chat.message", status: "channel_not_found", attempts: 1 },
      },
    ]);
    const posts = slack.calls.filter((c) => c.method === "chat.postMessage");
    expect(posts.every((c) => c.authorization === `Bearer ${CHAT_TOKEN}`)).toBe(true);
  });

  it("five failing invocations open the breaker: one escalation, the sixth waits, resume releases it", async () => {
    const failing = await Promise.all(
      Array.from({ length: 5 }, () => postWebhook(url, "flaky-hook", HOOK_TOKEN, {})),
    );
    for (const id of failing) expect((await waitForTrigger(pool, id)).diagnostic.code).toBe("setup_failed");
    await worker.waitForLog((l) => l.event === "breaker.escalated", "breaker.escalated");
    const alerts = () => slack.messages.filter((m) => m.channel === "C0ALERTS");
    expect(alerts()).toHaveLength(1);
    expect(alerts()[0]!.text).toContain("flaky");
    expect(alerts()[0]!.text).toContain("svc queue resume flaky");

    const status = (await (await fetch(`${url}/queue/status`)).json()) as { breakers: unknown[] };
    expect(status.breakers).toMatchObject([{ pipeline: "flaky" }]);

    const sixth = await postWebhook(url, "flaky-hook", HOOK_TOKEN, {});
    const held = await worker.waitForLog(
      (l) => l.event === "breaker.holding" && l.pipeline === "flaky",
      "the sixth invocation to wait",
    );
    const waiting = await lineage(pool, sixth);
    expect(waiting.invocations[0].id).toBe(held.invocation);
    expect(waiting.tasks).toEqual([]);
    const row = (await pool.query("SELECT status FROM svc.triggers WHERE id = $1", [sixth])).rows[0];
    expect(["queued", "running"]).toContain(row.status);

    const resumed = await fetch(`${url}/admin/resume`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pipeline: "flaky" }),
    });
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toEqual({ pipeline: "flaky", breaker: "closed", wasOpen: true });
    const ran = await waitForTrigger(pool, sixth);
    expect(ran.diagnostic.code).toBe("setup_failed");
    expect(alerts()).toHaveLength(1);
    await waitFor(async () => {
      const after = (await (await fetch(`${url}/queue/status`)).json()) as { breakers: unknown[] };
      return after.breakers.length === 0;
    }, "no open breaker");
  });
});
