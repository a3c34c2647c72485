import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { waitFor } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { postWebhook, type RoleProcess, startRole, writeConfigDir } from "../worker/processes.ts";
import { FakeChatApi } from "./fake-chat-api.ts";

const HOOK = "hook-token-0123456789";
const QUESTION = "How many days do customers have to ask for a refund?";
const PASSAGE = "within 45 days of delivery";
const REPLY = "45 days from delivery (knowledge/refunds.md).";

/** The run's agent answers whether its prompt carried the passage. */
const AGENT = `#!/bin/sh
prompt=$(cat)
case "$prompt" in *"${PASSAGE}"*) carried=true ;; *) carried=false ;; esac
echo "{\\"carried\\": $carried}"
`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const target = (name: string, url: string, key: string) =>
  `  ${name}:\n    runtime: openai\n    base_url: ${url}\n    model: m-${name}\n    timeout: 20s\n` +
  `    credentials:\n      - name: ${name}-key\n        secret: ${key}\n`;

/**
 * An ingress and two workers started at the same moment on one configuration directory with 200
 * documents: one index build between them, and every role retrieves from it, even with a query
 * rewrite target that answers off the point.
 */
describe("one knowledge index per host, shared by an ingress and two workers started together", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let url: string;
  const roles: RoleProcess[] = [];
  const models = new FakeChatApi();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await models.start();
    models.on("k-good", { kind: "answer", needle: PASSAGE, reply: REPLY });
    // the reporter's model: the same answer to every request, the query rewrite included
    models.on("k-rewrite", { kind: "reply", reply: "I do not know." });
    dir = await writeConfigDir(
      {
        "daemon.yaml": [
          `webhooks:\n  sources:\n    ask-hook: { verify: bearer, secret: ${HOOK} }\n`,
          "targets:\n",
          '  local:\n    runtime: command\n    command: ["./bin/agent"]\n    timeout: 60s\n',
          target("good", models.url, "k-good"),
          target("rewriter", models.url, "k-rewrite"),
          "ask:\n  targets: [good]\n",
          "knowledge:\n  retrieval:\n    minScore: 0.2\n    rewrite:\n      targets: [rewriter]\n",
          "worker:\n  concurrency: 1\n",
        ].join(""),
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: helps\n---\nYou help.\n",
        "pipelines/answer.yaml":
          "version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [ask-hook]\ntargets: [local]\ninstructions: Answer the customer.\nknowledge:\n  method: bm25\n  delivery: prompt\n",
        "bin/agent": AGENT,
      },
      ["bin/agent"],
    );
    await mkdir(join(dir, "knowledge", "deploys"), { recursive: true });
    await writeFile(
      join(dir, "knowledge", "refunds.md"),
      `# Refunds\n\nCustomers may return goods for a refund ${PASSAGE}.\n`,
    );
    for (let n = 1; n < 200; n++) {
      await writeFile(
        join(dir, "knowledge", "deploys", `window-${n}.md`),
        `# Deploy window ${n}\n\nDeploys of service ${n} happen on Tuesdays; the freeze lasts ${n % 9} days before a holiday.\n`,
      );
    }
    const port = String(await freePort());
    url = `http://127.0.0.1:${port}`;
    const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOME: dir, SVC_PORT: port };
    // all three at once, as a host's service manager starts them
    roles.push(startRole("ingress", env), startRole("worker", env), startRole("worker", env));
    await Promise.all([
      roles[0]!.waitForLog((l) => l.event === "ingress.listening", "ingress.listening", 120_000),
      roles[1]!.waitForLog((l) => l.event === "worker.started", "worker.started", 120_000),
      roles[2]!.waitForLog((l) => l.event === "worker.started", "worker.started", 120_000),
    ]);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 180_000);

  afterAll(async () => {
    await Promise.all(roles.map((role) => role.stop()));
    await models.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("builds the index once; the others wait for that build or find it done", () => {
    const builds = roles.flatMap((role) =>
      role.logs.filter(
        (l) => l.event === "knowledge.index" && /indexing 200 documents/.test(String(l.msg ?? l.message)),
      ),
    );
    expect(builds).toHaveLength(1);
    for (const role of roles) {
      expect(role.logs.find((l) => l.event === "knowledge.ready")).toMatchObject({ documents: 200 });
    }
  });

  it("POST /ask answers from the right document and cites it", async () => {
    const response = await fetch(`${url}/ask`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question: QUESTION }),
    });
    const body = (await response.json()) as { answer: string; sources: { path: string }[] };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.answer).toBe(REPLY);
    expect(body.sources[0]?.path).toBe("knowledge/refunds.md");
  });

  it("a run's prompt carries the passage, on whichever worker takes it", async () => {
    const ids = [
      await postWebhook(url, "ask-hook", HOOK, { question: QUESTION }),
      await postWebhook(url, "ask-hook", HOOK, { question: QUESTION }),
    ];
    for (const id of ids) {
      const invocation = await waitFor(async () => {
        const { rows } = await pool.query(
          "SELECT i.* FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1",
          [id],
        );
        return rows[0]?.status === "completed" || rows[0]?.status === "failed" ? rows[0] : undefined;
      }, "the run");
      expect(invocation.status, JSON.stringify(invocation.diagnostic)).toBe("completed");
      expect(invocation.result).toEqual({ carried: true });
      expect(invocation.knowledge.sources[0]).toMatchObject({ path: "knowledge/refunds.md" });
    }
  });
});
