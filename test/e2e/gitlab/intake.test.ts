// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { type FakeGitLab, startFakeGitLab } from "./fake-gitlab.ts";

const ROOT = join(import.meta.dirname, "../../..");
const FIXTURES = join(ROOT, "ingress/webhooks/gitlab/fixtures");
const TOKEN = "e2e-gitlab-secret-token-4d2a";
const SIGNING_KEY = randomBytes(32);
const SIGNING = `whsec_${SIGNING_KEY.toString("base64")}`;

/** GitLab's documented payloads, the event names they are stored under. */
const DOCUMENTED = [
  ["merge-request.json", "Merge Request Hook", "merge_request.open"],
  ["note-merge-request.json", "Note Hook", "note"],
  ["push.json", "Push Hook", "push"],
  ["tag-push.json", "Tag Push Hook", "tag_push"],
] as const;

const AGENT = `#!/bin/sh
cat > /dev/null
echo '{}'
`;

/** svc's GitLab: it tells dispatch who wrote each event (the members API) */
const GITLAB_TOKEN = "glpat-e2eIntakeBot00000001";

function files(apiUrl: string): Record<string, string> {
  return {
    "daemon.yaml": `codehost:
  kind: gitlab
  api_url: ${apiUrl}
  token: "\${GL_API_TOKEN}"
webhooks:
  sources:
    gitlab: { verify: gitlab, secret: "\${GL_TOKEN}" }
    gitlab-signed: { verify: gitlab, secret: "\${GL_TOKEN}", signing_secret: "\${GL_SIGNING}" }
targets:
  local:
    runtime: command
    command: ["./bin/agent"]
    timeout: 30s
ask:
  targets: [local]
worker:
  concurrency: 2
  grace_period: 5s
`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "bin/agent": AGENT,
    // no repos entry names the project, so the run checks nothing out
    "pipelines/review.yaml": `version: 1.0.0
agent: helper
trigger:
  codehost: [merge_request.open]
targets: [local]
setup:
  - run: env > "$RUN_DIR/env.txt"
instructions: Review the merge request.
`,
  };
}

/** Standard Webhooks headers as GitLab signs them: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">. */
function signed(body: string, id: string, at = Date.now(), key = SIGNING_KEY): Record<string, string> {
  const timestamp = String(Math.floor(at / 1000));
  const mac = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${mac}` };
}

describe("GitLab deliveries to the real ingress and worker", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let gitlab: FakeGitLab;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    // the documented merge request's project, its author (51) a developer there
    gitlab = await startFakeGitLab({
      tokens: { [GITLAB_TOKEN]: { id: 2, username: "svc-bot", bot: true, scopes: ["api"] } },
      projects: [
        {
          id: 1,
          path_with_namespace: "gitlabhq/gitlab-test",
          members: { 2: 30, 51: 30 },
          mergeRequests: [],
        },
      ],
    });
    dir = await writeConfigDir(files(gitlab.apiUrl), ["bin/agent"]);
    const env = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      GL_TOKEN: TOKEN,
      GL_SIGNING: SIGNING,
      GL_API_TOKEN: GITLAB_TOKEN,
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
    await gitlab?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const fixture = (name: string) => readFile(join(FIXTURES, name), "utf8");
  const deliver = (source: string, body: string, headers: Record<string, string>) =>
    fetch(`${url}/webhooks/${source}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  const triggers = async () => (await pool.query("SELECT count(*)::int AS n FROM svc.triggers")).rows[0].n;
  const answer = async (response: Response) => ({
    status: response.status,
    type: response.headers.get("content-type"),
    body: await response.text(),
  });

  it("stores every documented payload sent with the secret token, under GitLab's event name", async () => {
    for (const [name, hook, eventName] of DOCUMENTED) {
      const body = await fixture(name);
      const delivery = randomUUID();
      const response = await deliver("gitlab", body, {
        "x-gitlab-token": TOKEN,
        "x-gitlab-event": hook,
        "x-gitlab-event-uuid": delivery,
      });
      expect({ name, status: response.status }).toEqual({ name, status: 202 });
      const { trigger } = (await response.json()) as { trigger: string };
      const { rows } = await pool.query(
        "SELECT kind, source, event_name, delivery_id, payload FROM svc.triggers WHERE id = $1",
        [trigger],
      );
      expect(rows[0]).toEqual({
        kind: "codehost",
        source: "gitlab",
        event_name: eventName,
        delivery_id: delivery,
        payload: JSON.parse(body),
      });
    }
  });

  it("refuses a wrong or missing token with the bytes a missing source gets, and stores nothing", async () => {
    const before = await triggers();
    const reference = await answer(
      await deliver("nobody", "{}", { "x-gitlab-token": TOKEN, "x-gitlab-event": "Push Hook" }),
    );
    expect(reference.status).toBe(401);
    for (const [name, hook] of DOCUMENTED) {
      const body = await fixture(name);
      for (const token of [`${TOKEN}x`, TOKEN.slice(0, -1), "", undefined]) {
        const headers: Record<string, string> = {
          "x-gitlab-event": hook,
          "x-gitlab-event-uuid": randomUUID(),
        };
        if (token !== undefined) headers["x-gitlab-token"] = token;
        expect({ name, token, ...(await answer(await deliver("gitlab", body, headers))) }).toEqual({
          name,
          token,
          ...reference,
        });
      }
      // GitHub's bearer header is no GitLab token
      const bearer = await deliver("gitlab", body, { authorization: `Bearer ${TOKEN}` });
      expect(await answer(bearer)).toEqual(reference);
    }
    expect(await triggers()).toBe(before);
  });

  it("with a signing token, takes a signed delivery and refuses a bad signature, a replayed timestamp or a wrong token", async () => {
    const body = await fixture("push.json");
    const reference = await answer(await deliver("nobody", body, { "x-gitlab-token": TOKEN }));
    const before = await triggers();
    const refused: Record<string, Record<string, string>> = {
      "no signature": { "x-gitlab-token": TOKEN, "idempotency-key": randomUUID() },
      "bad signature": {
        "x-gitlab-token": TOKEN,
        ...signed(body, "id-bad", Date.now(), randomBytes(32)),
      },
      "signature of another body": { "x-gitlab-token": TOKEN, ...signed(`${body} `, "id-other") },
      "old timestamp": { "x-gitlab-token": TOKEN, ...signed(body, "id-old", Date.now() - 6 * 60_000) },
      "future timestamp": { "x-gitlab-token": TOKEN, ...signed(body, "id-future", Date.now() + 6 * 60_000) },
      "wrong token": { "x-gitlab-token": `${TOKEN}x`, ...signed(body, "id-token") },
      "no token": signed(body, "id-no-token"),
    };
    for (const [cause, headers] of Object.entries(refused)) {
      expect({ cause, ...(await answer(await deliver("gitlab-signed", body, headers))) }).toEqual({
        cause,
        ...reference,
      });
    }
    expect(await triggers()).toBe(before);

    const id = randomUUID();
    const accepted = await deliver("gitlab-signed", body, {
      "x-gitlab-token": TOKEN,
      "x-gitlab-event": "Push Hook",
      "idempotency-key": id,
      ...signed(body, id),
    });
    expect(accepted.status).toBe(202);
    const { trigger } = (await accepted.json()) as { trigger: string };
    // within the window, a replay that changes the unsigned Idempotency-Key is still the same delivery
    const replay = await deliver("gitlab-signed", body, {
      "x-gitlab-token": TOKEN,
      "idempotency-key": randomUUID(),
      ...signed(body, id),
    });
    expect(replay.status).toBe(202);
    expect(await replay.json()).toEqual({ trigger });
    expect(await triggers()).toBe(before + 1);
  });

  it("stores a redelivery (the same X-Gitlab-Event-UUID, or Idempotency-Key) once", async () => {
    const body = await fixture("note-merge-request.json");
    const before = await triggers();
    const uuid = randomUUID();
    const send = (headers: Record<string, string>) =>
      deliver("gitlab", body, { "x-gitlab-token": TOKEN, "x-gitlab-event": "Note Hook", ...headers });
    const first = await send({ "x-gitlab-event-uuid": uuid });
    expect(first.status).toBe(202);
    const { trigger } = (await first.json()) as { trigger: string };
    const again = await send({ "x-gitlab-event-uuid": uuid });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ trigger });
    expect(await triggers()).toBe(before + 1);

    // GitLab keeps Idempotency-Key across retries; it wins over the event UUID when both are sent
    const key = randomUUID();
    const keyed = await send({ "idempotency-key": key, "x-gitlab-event-uuid": randomUUID() });
    const { trigger: keyedTrigger } = (await keyed.json()) as { trigger: string };
    const retried = await send({ "idempotency-key": key, "x-gitlab-event-uuid": randomUUID() });
    expect(await retried.json()).toEqual({ trigger: keyedTrigger });
    expect(await triggers()).toBe(before + 2);
  });

  it("tells an authentic sender what its delivery lacks, and /events never reaches a gitlab source", async () => {
    const before = await triggers();
    const kindless = await deliver("gitlab", JSON.stringify({ project: { id: 1 } }), {
      "x-gitlab-token": TOKEN,
    });
    expect(kindless.status).toBe(400);
    const { error } = (await kindless.json()) as { error: { code: string; message: string } };
    expect(error).toMatchObject({ code: "bad_request" });
    expect(error.message).toContain('a GitLab delivery needs an "object_kind" field in its payload');
    const long = await deliver("gitlab", await fixture("push.json"), {
      "x-gitlab-token": TOKEN,
      "idempotency-key": "k".repeat(201),
    });
    expect(long.status).toBe(400);
    expect(await long.text()).toContain("the Idempotency-Key header must be 1 to 200 characters");
    const reference = await answer(await deliver("nobody", "{}", { "x-gitlab-token": TOKEN }));
    const events = await fetch(`${url}/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-gitlab-token": TOKEN, "x-github-event": "push" },
      body: await fixture("push.json"),
    });
    expect(await answer(events)).toEqual(reference);
    expect(await triggers()).toBe(before);
  });

  it("merge_request.open fires its trigger.codehost pipeline with REPO, SHA and BRANCH as GitLab states them", async () => {
    const body = await fixture("merge-request.json");
    const response = await deliver("gitlab", body, {
      "x-gitlab-token": TOKEN,
      "x-gitlab-event": "Merge Request Hook",
      "idempotency-key": randomUUID(),
    });
    expect(response.status).toBe(202);
    const { trigger: id } = (await response.json()) as { trigger: string };
    const trigger = await waitForTrigger(pool, id);
    expect(trigger).toMatchObject({ status: "completed", diagnostic: null });
    const { workloads, invocations, tasks } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["review"]);
    expect(invocations[0]).toMatchObject({ status: "completed", diagnostic: null });
    // no repository is configured for the project: nothing is checked out
    expect(tasks.map((t) => t.kind)).not.toContain("checkout");
    const runDir = join(dir, "workspaces", workloads[0].id, invocations[0].id, "run");
    const lines = (await readFile(join(runDir, "env.txt"), "utf8")).split("\n");
    const env = Object.fromEntries(
      lines
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    expect(env).toMatchObject({
      REPO: "gitlabhq/gitlab-test",
      SHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      BRANCH: "ms-viewport",
      EVENT_NAME: "merge_request.open",
      EVENT_SOURCE: "codehost",
      BASE_SHA: "",
      BASE_REF: "",
    });
  });

  it("the same merge request by someone GitLab does not place at developer or above is a stranger's: the unsandboxed pipeline is gated", async () => {
    const body = JSON.parse(await fixture("merge-request.json"));
    body.object_attributes.author_id = 77;
    const response = await deliver("gitlab", JSON.stringify(body), {
      "x-gitlab-token": TOKEN,
      "x-gitlab-event": "Merge Request Hook",
      "idempotency-key": randomUUID(),
    });
    const { trigger: id } = (await response.json()) as { trigger: string };
    expect(await waitForTrigger(pool, id)).toMatchObject({
      status: "completed",
      diagnostic: { code: "author_not_allowed" },
    });
    expect((await lineage(pool, id)).workloads).toEqual([]);
  });

  it("a note or a push fires no merge_request.open pipeline", async () => {
    const body = await fixture("push.json");
    const response = await deliver("gitlab", body, {
      "x-gitlab-token": TOKEN,
      "idempotency-key": randomUUID(),
    });
    const { trigger: id } = (await response.json()) as { trigger: string };
    expect(await waitForTrigger(pool, id)).toMatchObject({
      status: "completed",
      diagnostic: { code: "no_matching_pipeline" },
    });
  });
});
