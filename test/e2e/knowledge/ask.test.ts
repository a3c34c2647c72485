import { cp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { svc } from "../cli/support.ts";
import { type RoleProcess, startIngress, writeConfigDir } from "../worker/processes.ts";
import { FakeChatApi } from "./fake-chat-api.ts";

const FIXTURE = join(import.meta.dirname, "../../fixtures/knowledge/knowledge");
const PASSAGE = "pg_restore";
const REPLY = "Create a fresh database and run pg_restore against it (knowledge/backups.md).";

/** the fields the tests read from /ask and /knowledge answers */
interface Answer {
  answer: string;
  target: string;
  method: string;
  sources: { path: string; line: number; score: number }[];
  error: { code: string; message: string; targets: { target: string; reason: string }[] };
  documents: { path: string; title: string; size: number; indexed_at: string }[];
  passages: { path: string }[];
}

function daemonYaml(modelUrl: string, resetUrl: string): string {
  const target = (name: string, key: string, url = modelUrl) =>
    `  ${name}:\n    runtime: openai\n    base_url: ${url}\n    model: m-${name}\n    timeout: 20s\n    credentials:\n      - name: ${name}-key\n        secret: ${key}\n`;
  return [
    "targets:\n",
    target("offline", "k-offline", resetUrl),
    target("broken", "k-broken"),
    target("good", "k-good"),
    target("revoked", "k-revoked"),
    target("slow-lane", "k-429"),
    "ask:\n  targets: [broken, good]\n",
    "knowledge:\n  retrieval:\n    topK: 3\n",
  ].join("");
}

/** POST /ask and GET /knowledge through a real `svc ingress` process, a real CLI, real qmd, real Postgres. */
describe("ask: the team's knowledge answered by the first usable target", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let url: string;
  const models = new FakeChatApi();
  // a model host whose connections are reset as soon as they open: counts every one of them
  let resets = 0;
  const resetter = createServer((socket) => {
    resets += 1;
    socket.resetAndDestroy();
  });
  const env: Record<string, string> = {};

  const ask = async (body: unknown) => {
    const response = await fetch(`${url}/ask`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Answer };
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await models.start();
    models.on("k-broken", { kind: "status", status: 500 });
    models.on("k-good", { kind: "answer", needle: PASSAGE, reply: REPLY });
    models.on("k-429", { kind: "status", status: 429 });
    // k-revoked has no behaviour: the fake answers 401 like an API refusing a key
    await new Promise<void>((resolve) => resetter.listen(0, "127.0.0.1", resolve));
    const resetUrl = `http://127.0.0.1:${(resetter.address() as { port: number }).port}/v1`;
    dir = await writeConfigDir({ "daemon.yaml": daemonYaml(models.url, resetUrl) });
    await cp(FIXTURE, join(dir, "knowledge"), { recursive: true });
    Object.assign(env, { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, HOME: dir });
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await ingress?.stop();
    await models.stop();
    await new Promise((resolve) => resetter.close(resolve));
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("retrieves the passage, fails over from a 500 to the next target, and cites the sources", async () => {
    models.requests.length = 0;
    const { status, body } = await ask({ question: "How do I restore a backup?", method: "bm25" });
    expect(status).toBe(200);
    expect(body.answer).toBe(REPLY);
    expect(body.target).toBe("good");
    expect(body.method).toBe("bm25");
    expect(body.sources[0]).toMatchObject({ path: "knowledge/backups.md" });
    expect(body.sources[0]!.line).toBeGreaterThan(1);
    expect(body.sources[0]!.score).toBeGreaterThan(0);
    expect(body.sources.length).toBeLessThanOrEqual(3);
    // the order of ask.targets: the broken one was asked first, with the passage already in the prompt
    expect(models.keysSeen()).toEqual(["k-broken", "k-good"]);
    expect(models.requests[0]!.prompt).toContain("## Knowledge");
    expect(models.requests[0]!.prompt).toContain("knowledge/backups.md:");
  });

  it("hybrid without vectors answers with BM25 and says so in `method`", async () => {
    const { status, body } = await ask({ question: "How do I restore a backup?", targets: ["good"] });
    expect(status).toBe(200);
    expect(body.method).toBe("bm25");
    expect(ingress.logs.some((line) => line.event === "knowledge.hybrid_without_vectors")).toBe(true);
  });

  it("a 401 marks the credential dead for every process; nothing usable answers 503 with a reason per target", async () => {
    models.requests.length = 0;
    const first = await ask({
      question: "How do I restore a backup?",
      targets: ["revoked", "slow-lane", "broken"],
    });
    expect(first.status).toBe(503);
    expect(first.body.error.code).toBe("ask_unavailable");
    const reasons = Object.fromEntries(
      (first.body.error.targets as { target: string; reason: string }[]).map((r) => [r.target, r.reason]),
    );
    expect(reasons.revoked).toContain("dead");
    expect(reasons["slow-lane"]).toContain("cooling");
    expect(reasons.broken).toContain("HTTP 500");
    const { rows } = await pool.query(
      "SELECT target, credential, state FROM svc.credential_cooldowns ORDER BY target",
    );
    expect(rows).toEqual([
      { target: "revoked", credential: "revoked-key", state: "dead" },
      { target: "slow-lane", credential: "slow-lane-key", state: "cooling" },
    ]);
    expect(ingress.logs.some((line) => line.event === "credential.dead")).toBe(true);

    // the dead and the cooling credential are not tried again
    models.requests.length = 0;
    const second = await ask({ question: "restore", targets: ["revoked", "slow-lane", "good"] });
    expect(second.status).toBe(200);
    expect(models.keysSeen()).toEqual(["k-good"]);
  });

  it("a target whose connection is reset is skipped by the next questions while it cools down", async () => {
    models.requests.length = 0;
    const first = await ask({ question: "How do I restore a backup?", targets: ["offline", "good"] });
    expect(first.status).toBe(200);
    expect(first.body.target).toBe("good");
    expect(resets).toBe(1);
    const failed = () =>
      ingress.logs.filter((line) => line.event === "ask.target_failed" && line.target === "offline");
    expect(failed()[0]!.reason).toBe("unreachable (ECONNRESET); skipped for 5 s");
    // the next questions do not open a connection to it: they go straight to the next target
    for (let i = 0; i < 3; i += 1) {
      const next = await ask({ question: "How do I restore a backup?", targets: ["offline", "good"] });
      expect(next.body.target).toBe("good");
    }
    expect(resets).toBe(1);
    expect(failed()).toHaveLength(4);
    expect(String(failed()[1]!.reason)).toMatch(/^skipped: down \(ECONNRESET\); next try in [1-5] s$/);
    expect(models.keysSeen()).toEqual(["k-good", "k-good", "k-good", "k-good"]);
  });

  it("refuses bad bodies with a message and asks nobody", async () => {
    models.requests.length = 0;
    expect((await ask({})).status).toBe(400);
    expect((await ask({ question: "   " })).status).toBe(400);
    const long = await ask({ question: "x".repeat(8 * 1024 + 1) });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain("8192 bytes");
    const unknown = await ask({ question: "hi", targets: ["nope"] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('"nope"');
    expect((await ask({ question: "hi", method: "vector" })).status).toBe(400);
    expect((await ask({ question: "hi", extra: 1 })).status).toBe(400);
    expect(models.requests).toEqual([]);
  });

  it("GET /knowledge lists the documents and searches them without a model", async () => {
    const listing = (await (await fetch(`${url}/knowledge`)).json()) as Answer;
    expect(listing.documents).toHaveLength(8);
    expect(listing.documents).toContainEqual(
      expect.objectContaining({
        path: "knowledge/runbook.md",
        title: "Runbook",
        indexed_at: expect.any(String),
      }),
    );
    const search = (await (await fetch(`${url}/knowledge?q=rotate%20webhook%20secret`)).json()) as Answer;
    expect(search.passages[0]!.path).toBe("knowledge/ops/rotation.md");
  });

  it("svc ask --target a --target b asks in that order and prints the answer, then the sources", async () => {
    models.requests.length = 0;
    const run = await svc(["ask", "How do I restore a backup?", "--target", "broken", "--target", "good"], {
      SVC_DAEMON_URL: url,
      HOME: dir,
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(models.keysSeen()).toEqual(["k-broken", "k-good"]);
    const answerAt = run.stdout.indexOf(REPLY);
    const sourcesAt = run.stdout.indexOf("knowledge/backups.md:");
    expect(answerAt).toBeGreaterThanOrEqual(0);
    expect(sourcesAt).toBeGreaterThan(answerAt);

    // flags before the question: each --target takes one value, the question stays the argument
    models.requests.length = 0;
    const flagsFirst = await svc(
      ["ask", "--target", "broken", "--target", "good", "How do I restore a backup?", "--json"],
      { SVC_DAEMON_URL: url, HOME: dir },
    );
    expect(flagsFirst.stderr).toBe("");
    expect(flagsFirst.code).toBe(0);
    expect(models.keysSeen()).toEqual(["k-broken", "k-good"]);
    expect(JSON.parse(flagsFirst.stdout)).toMatchObject({ target: "good", answer: REPLY });

    models.requests.length = 0;
    const reversed = await svc(
      ["ask", "How do I restore a backup?", "--target", "good", "--target", "broken", "--json"],
      {
        SVC_DAEMON_URL: url,
        HOME: dir,
      },
    );
    expect(reversed.code).toBe(0);
    expect(models.keysSeen()).toEqual(["k-good"]);
    expect(JSON.parse(reversed.stdout)).toMatchObject({ target: "good", answer: REPLY });

    const list = await svc(["knowledge", "list"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("knowledge/ops/oncall.md");
    const search = await svc(["knowledge", "search", "on-call pages"], { SVC_DAEMON_URL: url, HOME: dir });
    expect(search.stdout.split("\n")[0]).toContain("knowledge/ops/oncall.md");
  });
});
