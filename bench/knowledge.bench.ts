/**
 * Knowledge over 1,000 generated documents: index build time (qmd), retrieval latency (p50 of
 * BM25 searches, qmd in-process) and the POST /ask round trip (p50) through a real ingress against
 * a loopback OpenAI-compatible server that answers at once, less the model's own time. Baselines,
 * measured in the same run: reading every document (the floor of any index build) and starting
 * `qmd --version` (what every search cost while qmd ran as a process). Database for the ask part: SVC_BENCH_DATABASE_URL, else SVC_TEST_DATABASE_URL, else
 * SVC_DATABASE_URL (a server on which it may create and drop a database); without one it is skipped.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startIngress } from "../ingress/main.ts";
import { Knowledge } from "../shared/knowledge/service.ts";
import { discoverSources } from "../shared/knowledge/sources.ts";
import { createLogger } from "../shared/logger.ts";

const DOCUMENTS = 1_000;
const QUERIES = 40;
const ASKS = 30;
const WORDS = (
  "deploy backup restore ingress worker queue credential token secret webhook pipeline target model " +
  "runbook incident pager rotation database replica index search latency budget release branch review " +
  "cluster node volume snapshot migration schema config daemon schedule drain resume metrics trace log"
).split(" ");

function document(i: number): string {
  const pick = (n: number) =>
    Array.from({ length: n }, (_, k) => WORDS[(i * 7 + k * 13) % WORDS.length]).join(" ");
  return `# Note ${i}\n\nTopic ${pick(6)}.\n\n## Details\n\nMarker zq${i}x. ${pick(40)}.\n\n## Steps\n\n${pick(30)}.\n`;
}

const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const logger = createLogger({ role: "bench", level: "error" });
const dir = await mkdtemp(join(tmpdir(), "svc-bench-knowledge-"));
try {
  await mkdir(join(dir, "knowledge", "notes"), { recursive: true });
  await Promise.all(
    Array.from({ length: DOCUMENTS }, (_, i) =>
      writeFile(join(dir, "knowledge", "notes", `n${String(i).padStart(4, "0")}.md`), document(i)),
    ),
  );
  const config = { dir, knowledge: { retrieval: { engine: "local", topK: 5, rewrite: { targets: [] } } } };

  let start = performance.now();
  const knowledge = await Knowledge.open(config, logger, { force: true });
  const build = performance.now() - start;
  start = performance.now();
  for (const source of await discoverSources(dir)) await readFile(source.absolute, "utf8");
  const readAll = performance.now() - start;

  const searches: number[] = [];
  let found = 0;
  for (let q = 0; q < QUERIES; q++) {
    const i = (q * 97) % DOCUMENTS;
    start = performance.now();
    const result = await knowledge.search(`where is marker zq${i}x about ${WORDS[q % WORDS.length]}`, {
      method: "bm25",
    });
    searches.push(performance.now() - start);
    if (result.passages[0]?.path.endsWith(`n${String(i).padStart(4, "0")}.md`)) found += 1;
  }
  // what every search cost when qmd ran as a process: the floor of one qmd process start
  const qmdBin = join(dirname(fileURLToPath(import.meta.resolve("@tobilu/qmd"))), "..", "bin", "qmd");
  const spawns: number[] = [];
  for (let k = 0; k < 10; k++) {
    start = performance.now();
    const ran = spawnSync(process.execPath, [qmdBin, "--version"], { encoding: "utf8" });
    if (ran.status !== 0) throw new Error(`qmd --version failed: ${ran.stderr}`);
    spawns.push(performance.now() - start);
  }
  console.log(`documents: ${DOCUMENTS}; index build (qmd, from scratch): ${build.toFixed(0)} ms`);
  console.log(
    `baseline: reading every document: ${readAll.toFixed(1)} ms (build/read ${(build / readAll).toFixed(0)}x)`,
  );
  console.log(
    `retrieval p50 over ${QUERIES} BM25 searches (qmd in-process): ${p50(searches).toFixed(1)} ms (target <= 10 ms: ${p50(searches) <= 10 ? "met" : "MISSED"}); right document first in ${found}/${QUERIES}`,
  );
  console.log(
    `baseline: one qmd process start (qmd --version), what each search cost before retrieval ran in-process, p50: ${p50(spawns).toFixed(1)} ms (search/start ${(p50(searches) / p50(spawns)).toFixed(2)}x)`,
  );
  await askRoundTrip(dir, p50(searches));
} finally {
  await rm(dir, { recursive: true, force: true });
}

async function askRoundTrip(dir: string, searchP50: number): Promise<void> {
  const adminUrl =
    process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL ?? process.env.SVC_DATABASE_URL;
  if (!adminUrl) {
    console.log("ask round trip: skipped (set SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL)");
    return;
  }
  // the model's own time: from its first byte of the request to the end of its answer
  const modelTimes: number[] = [];
  const model = createServer((req, res) => {
    const arrived = performance.now();
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "answer" } }] }));
      modelTimes.push(performance.now() - arrived);
    });
  });
  await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
  const modelUrl = `http://127.0.0.1:${(model.address() as { port: number }).port}/v1`;
  await writeFile(
    join(dir, "daemon.yaml"),
    `targets:\n  fast:\n    runtime: openai\n    base_url: ${modelUrl}\n    model: m\n    credentials:\n      - name: k\n        secret: bench\nask:\n  targets: [fast]\nknowledge:\n  retrieval:\n    topK: 5\n`,
  );
  const name = `svc_bench_knowledge_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const ingress = await startIngress({
    env: { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: url.toString(), SVC_PORT: "0", PATH: process.env.PATH },
    logger,
  });
  try {
    const times: number[] = [];
    for (let k = 0; k < ASKS; k++) {
      const start = performance.now();
      const response = await fetch(`http://127.0.0.1:${ingress.port}/ask`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        // no method: /ask's default (hybrid, served as BM25 by the local engine)
        body: JSON.stringify({ question: `what does marker zq${k * 31}x say about restore?` }),
      });
      await response.json();
      if (response.status !== 200) throw new Error(`/ask answered ${response.status}`);
      times.push(performance.now() - start);
    }
    const overhead = p50(times) - p50(modelTimes);
    console.log(
      `ask round trip p50 over ${ASKS} POST /ask: ${p50(times).toFixed(1)} ms; the model's own time p50 ${p50(modelTimes).toFixed(2)} ms; svc's overhead ${overhead.toFixed(1)} ms (target <= 20 ms: ${overhead <= 20 ? "met" : "MISSED"}; ask/retrieval ${(p50(times) / searchP50).toFixed(2)}x)`,
    );
  } finally {
    await ingress.stop();
    model.close();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}
