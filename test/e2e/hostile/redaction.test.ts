import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { migrate } from "../../../db/migrate.ts";
import { putSecret } from "../../../db/secrets.ts";
import { createInstanceKey, readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { baseFiles, EXECUTABLES } from "../worker/config-fixture.ts";
import { FakeModelApi } from "../worker/fake-model-api.ts";
import { orchestrator } from "../worker/orchestration-script.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const HOOK = "redaction-hook-token-0123456789";
const READER = "redaction-reader-token-0123456789";
/** the target's credential: svc hands it to the agent as MODEL_KEY */
const MODEL_KEY = "sk-model-credential-7f3a9c1e5b";
/** a secret svc never held, in a shape the rules name (`*_TOKEN=`) */
const UNKNOWN = "deploy-secret-svc-never-saw-42";
const MARKER = "[redacted]";
/** a code-host principal's token, stored encrypted (token_ref): svc learns it only when a task is bound */
const REVIEWER_TOKEN = "ghs_storedReviewerToken0123456789";

/**
 * The agent of a stranger's pull request: it prints everything it was given (its credential, its run
 * token, the tool protocol's token and mcp.json that holds it) to stdout and stderr, and writes it
 * into the surface directory. It keeps a copy of its token in the test's directory (outside every
 * artifact) so the test knows what to look for.
 */
const LEAKY_AGENT = `#!/bin/sh
cat > /dev/null
printf '%s' "$SVC_AGENT_TOKEN" > "$HOME/leaked-token"
echo "credential: $MODEL_KEY"
echo "run token: $SVC_AGENT_TOKEN / mcp token: $SVC_MCP_TOKEN"
cat "$SVC_MCP_CONFIG"
echo "to stderr: $MODEL_KEY $SVC_AGENT_TOKEN" >&2
echo "DEPLOY_TOKEN=${UNKNOWN}"
mkdir -p "$SURFACE_DIR/notes"
{ echo "key=$MODEL_KEY"; echo "token $SVC_AGENT_TOKEN"; cat "$SVC_MCP_CONFIG"; } > "$SURFACE_DIR/leak.txt"
printf '{"k": "%s", "t": "%s"}\\n' "$MODEL_KEY" "$SVC_MCP_TOKEN" > "$SURFACE_DIR/notes/leak.json"
echo '{"ok": true}'
`;

/** A task of an orchestrated run, bound to a principal: it prints the principal's token and its own run token. */
const LEAKY_TASK = `#!/bin/sh
cat > /dev/null
printf '%s' "$SVC_AGENT_TOKEN" > "$HOME/task-token"
echo "principal token: $GH_TOKEN (also $GITHUB_TOKEN)"
echo "task token: $SVC_AGENT_TOKEN"
echo '{"finding": "none"}'
`;

describe("hostile: an agent that prints its secrets leaves none in stored artifacts", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const model = new FakeModelApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const files = baseFiles(
      {
        sources: `    leak-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    split-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`,
        targets: `  leaky-task: { runtime: command, command: ["./bin/leaky-task"], timeout: 30s }
  planner:
    runtime: openai
    base_url: "\${MODEL_URL}"
    model: test-model
    max_turns: 12
    timeout: 60s
    credentials: [{ name: a, secret: planner-key-0123456789 }]
  leaky:
    runtime: command
    command: ["./bin/leaky-agent"]
    timeout: 30s
    credentials:
      - name: model
        secret: "\${MODEL_KEY}"
        env: MODEL_KEY
`,
      },
      {
        "pipelines/leak.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [leak-hook]
targets: [leaky]
instructions: review the pull request
`,
        "pipelines/split.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [split-hook]
targets: [leaky-task]
instructions: Split the work into tasks and combine what they find.
orchestrator:
  strategy: { type: auto }
  targets: [planner]
principals:
  pull-request-reviewer: codehost.principal.42
`,
        "skills/review/SKILL.md":
          "---\nname: review\ndescription: Review one area.\nmetadata:\n  version: 1.0.0\nprincipal: pull-request-reviewer\n---\nReview the area you are given.\n",
      },
    );
    files["daemon.yaml"] = files["daemon.yaml"]!.replace(
      "  token: e2e-codehost-token-unused\n",
      '  token: e2e-codehost-token-unused\n  principals:\n    "42":\n      token_ref: codehost/principal/42\n',
    );
    files["daemon.yaml"] +=
      `auth:\n  tokens:\n    reader:\n      scopes: ["*"]\n      secret: "\${READER_TOKEN}"\n`;
    dir = await writeConfigDir({ ...files, "bin/leaky-agent": LEAKY_AGENT, "bin/leaky-task": LEAKY_TASK }, [
      ...EXECUTABLES,
      "bin/leaky-agent",
      "bin/leaky-task",
    ]);
    // the principal's token is a stored secret, as `svc setup` leaves it
    await createInstanceKey(join(dir, "instance.key"));
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await migrate(pool);
    await putSecret(
      pool,
      await readInstanceKey(join(dir, "instance.key")),
      "codehost/principal/42",
      REVIEWER_TOKEN,
    );
    await model.start();
    model.answer("planner-key-0123456789", {
      status: 200,
      reply: orchestrator(
        [{ instructions: "review as the reviewer", skill: "review", principal: "pull-request-reviewer" }],
        (_waited, read) => ({ read: read.map((entry) => entry.json) }),
      ),
    });
    const env: Record<string, string> = {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      HOOK_TOKEN: HOOK,
      LINEAR_SECRET: "unused-linear-secret",
      READER_TOKEN: READER,
      MODEL_KEY,
      MODEL_URL: model.url,
      HOME: dir,
    };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    // the daemon's URL makes the worker write mcp.json and hand out SVC_MCP_TOKEN
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await model.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = async (path: string) => {
    const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${READER}` } });
    expect(response.status).toBe(200);
    return response.text();
  };

  it("the transcript and surface artifacts, in the database and through the API, carry the marker, not the values", async () => {
    const id = await postWebhook(url, "leak-hook", HOOK, {});
    const trigger = await waitForTrigger(pool, id);
    // the run ends as any run whose agent answered: completed, nothing published (no outputs)
    expect(trigger.status).toBe("completed");
    const token = await waitFor(
      async () => (await readFile(join(dir, "leaked-token"), "utf8").catch(() => "")) || undefined,
      "the agent's copy of its token",
    );
    expect(token).toMatch(/^svct_/);
    const secrets = [MODEL_KEY, token, UNKNOWN];

    const { invocations, artifacts } = await lineage(pool, id);
    expect(invocations[0]).toMatchObject({ status: "completed", diagnostic: null, result: { ok: true } });
    const stored = Object.fromEntries(artifacts.map((a) => [a.name as string, a.rendered as string]));
    expect(Object.keys(stored).sort()).toEqual([
      "result.json",
      "surface/leak.txt",
      "surface/notes/leak.json",
      "transcript",
    ]);
    // what the agent printed is there, each secret in it replaced by the marker
    expect(stored.transcript).toContain(`credential: ${MARKER}`);
    expect(stored.transcript).toContain(`run token: ${MARKER} / mcp token: ${MARKER}`);
    expect(stored.transcript).toContain(`"Authorization": "${MARKER}"`);
    expect(stored.transcript).toContain(`to stderr: ${MARKER} ${MARKER}`);
    expect(stored.transcript).toContain(`DEPLOY_TOKEN=${MARKER}`);
    expect(stored["surface/leak.txt"]).toContain(`key=${MARKER}\ntoken ${MARKER}\n`);
    expect(stored["surface/notes/leak.json"]).toBe(`{"k": "${MARKER}", "t": "${MARKER}"}\n`);
    for (const text of Object.values(stored))
      for (const secret of secrets) expect(text).not.toContain(secret);
    // the transcript svc keeps on disk (transcriptRetentionDays) is the redacted text too
    const transcriptRow = artifacts.find((a) => a.name === "transcript")!;
    const onDisk = await readFile(transcriptRow.path, "utf8");
    expect(onDisk).toBe(stored.transcript);
    expect(Number(transcriptRow.size)).toBe(Buffer.byteLength(onDisk));

    // the API serves the stored text: the artifacts route and the trace that mirrors it
    const served = await api(`/invocations/${invocations[0].id}/artifacts`);
    expect(served).toContain(MARKER);
    const trace = await api(`/trace/${id}`);
    expect(trace).toContain(MARKER);
    for (const secret of secrets) {
      expect(served).not.toContain(secret);
      expect(trace).not.toContain(secret);
    }
    // and neither process logged them
    for (const line of [...worker.output, ...ingress.output])
      for (const secret of secrets) expect(line).not.toContain(secret);
  });

  it("an orchestrated task's transcript loses its principal's stored token and its own run token", async () => {
    const id = await postWebhook(url, "split-hook", HOOK, {});
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const taskToken = await waitFor(
      async () => (await readFile(join(dir, "task-token"), "utf8").catch(() => "")) || undefined,
      "the task's copy of its token",
    );
    expect(taskToken).toMatch(/^svct_/);
    const { invocations, artifacts } = await lineage(pool, id);
    // the task ran bound to the principal and its result went back to the orchestrator
    expect(invocations[0]).toMatchObject({
      status: "completed",
      result: { read: [{ status: "completed", result: { finding: "none" } }] },
    });
    const transcript = artifacts.find((a) => /.\/transcript$/.test(a.name));
    // a token principal's token never reaches a task at all (issue 55, finding 6)
    expect(transcript?.rendered).toContain("principal token:  (also )");
    expect(transcript?.rendered).toContain(`task token: ${MARKER}`);
    const onDisk = await readFile(transcript!.path, "utf8");
    const served = await api(`/invocations/${invocations[0].id}/artifacts`);
    for (const text of [...artifacts.map((a) => a.rendered as string), onDisk, served])
      for (const secret of [REVIEWER_TOKEN, taskToken]) expect(text).not.toContain(secret);
    for (const line of [...worker.output, ...ingress.output]) expect(line).not.toContain(REVIEWER_TOKEN);
  });
});
