import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import YAML from "yaml";
import { loadConfig } from "../../shared/config/load.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { printLine, timed } from "./support/accounting.ts";
import { drillEnv, SECRETS, writeDrillConfig } from "./support/config.ts";
import { hmacHex, send, type WebhookRequest } from "./support/load.ts";
import { type IngressProcess, ROOT, type SvcProcess, startIngress, stopAll } from "./support/processes.ts";

const DRILL = "fuzz";
const SEED = Number(process.env.DRILL_SEED ?? 424_242);
const HTTP_RUNS = Number(process.env.DRILL_FUZZ_HTTP_RUNS ?? 3_000);
const CONFIG_RUNS = Number(process.env.DRILL_FUZZ_CONFIG_RUNS ?? 1_500);
const CONFIG_PROCESS_RUNS = Number(process.env.DRILL_FUZZ_CONFIG_PROCESS_RUNS ?? 12);

/** Header values Node's client accepts (visible ASCII and spaces); anything else never reaches the server. */
const headerText = fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,80}$/);

const routes = fc.oneof(
  fc.constantFrom(
    "/webhooks/hook",
    "/webhooks/quiet",
    "/webhooks/gh",
    "/webhooks/lin",
    "/events",
    "/webhooks/nope",
  ),
  fc.stringMatching(/^[A-Za-z0-9._~%-]{1,40}$/).map((name) => `/webhooks/${name}`),
  fc.constantFrom(
    "/webhooks/",
    "/webhooks/hook/extra",
    "/webhooks/%2e%2e",
    "/webhooks/__proto__",
    "/webhooks/constructor",
    "/webhooks/hook?x=1",
    "/webhooks//hook",
  ),
);

const jsonBody = fc.jsonValue({ maxDepth: 4 }).map((value) => Buffer.from(JSON.stringify(value)));
const bodies = fc.oneof(
  { weight: 4, arbitrary: jsonBody },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 300 }).map((text) => Buffer.from(text)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from('{"a":"\\u0000"}'),
      Buffer.from('{"a":"\\ud800"}'),
      Buffer.from(`${"[".repeat(5_000)}${"]".repeat(5_000)}`),
      Buffer.from(`{"a":${"9".repeat(400)}}`),
      Buffer.from("\ufeff{}"),
      Buffer.alloc(0),
      Buffer.from("null"),
      Buffer.alloc(1_100_000, 0x20),
    ),
  },
  {
    weight: 2,
    // shaped like the real thing, with hostile field values
    arbitrary: fc
      .record({
        type: fc.oneof(fc.constantFrom("Issue", "Comment", ""), fc.jsonValue({ maxDepth: 1 })),
        action: fc.oneof(fc.constantFrom("create", "opened", ""), fc.jsonValue({ maxDepth: 1 })),
        webhookTimestamp: fc.oneof(fc.constant("now"), fc.jsonValue({ maxDepth: 1 }), fc.double()),
        repository: fc.jsonValue({ maxDepth: 2 }),
      })
      .map((payload) =>
        Buffer.from(
          JSON.stringify(
            payload.webhookTimestamp === "now" ? { ...payload, webhookTimestamp: Date.now() } : payload,
          ),
        ),
      ),
  },
);

interface FuzzCase {
  route: string;
  body: Buffer;
  auth: "valid" | "invalid" | "none" | "garbage";
  garbage: string;
  sign: "valid" | "invalid" | "none";
  contentType: string | undefined;
  event: string | undefined;
  delivery: string | undefined;
  encoding: string | undefined;
  extra: [string, string][];
}

const anything: fc.Arbitrary<FuzzCase> = fc.record({
  route: routes,
  body: bodies,
  auth: fc.constantFrom("valid", "invalid", "none", "garbage"),
  garbage: headerText,
  sign: fc.constantFrom("valid", "valid", "invalid", "none"),
  contentType: fc.option(
    fc.oneof(
      fc.constantFrom(
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/json; charset=latin1",
        "text/plain",
        "application/jsonx",
      ),
      headerText,
    ),
    { nil: undefined },
  ),
  event: fc.option(fc.oneof(fc.constantFrom("push", "issues", "pull_request", "ping"), headerText), {
    nil: undefined,
  }),
  delivery: fc.option(fc.oneof(headerText, fc.stringMatching(/^[a-z]{201,230}$/)), { nil: undefined }),
  encoding: fc.option(fc.constantFrom("gzip", "identity", "br", "IDENTITY"), { nil: undefined }),
  extra: fc.array(fc.tuple(fc.stringMatching(/^x-[a-z-]{1,20}$/), headerText), { maxLength: 3 }),
});

/** Authentic callers of the real routes (right secret, JSON media type) with hostile bodies and headers: this reaches the store. */
const authentic: fc.Arbitrary<FuzzCase> = fc.record({
  route: fc.constantFrom("/webhooks/hook", "/webhooks/quiet", "/webhooks/gh", "/webhooks/lin", "/events"),
  body: bodies,
  auth: fc.constant("valid" as const),
  garbage: fc.constant(""),
  sign: fc.constant("valid" as const),
  contentType: fc.constantFrom("application/json", "application/json; charset=utf-8"),
  event: fc.oneof(fc.constantFrom("push", "issues", "pull_request", "ping"), headerText),
  delivery: fc.option(fc.oneof(headerText, fc.stringMatching(/^[a-z]{201,230}$/)), { nil: undefined }),
  encoding: fc.option(fc.constantFrom("identity", "gzip"), { nil: undefined, freq: 4 }),
  extra: fc.array(fc.tuple(fc.stringMatching(/^x-[a-z-]{1,20}$/), headerText), { maxLength: 2 }),
});

const cases = fc.oneof({ weight: 3, arbitrary: anything }, { weight: 2, arbitrary: authentic });

function toRequest(c: FuzzCase): WebhookRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of c.extra) headers[name] = value;
  if (c.contentType !== undefined) headers["content-type"] = c.contentType;
  if (c.auth === "valid") headers.authorization = `Bearer ${SECRETS.DRILL_TOKEN}`;
  else if (c.auth === "invalid") headers.authorization = `Bearer ${SECRETS.DRILL_TOKEN.slice(0, -1)}`;
  else if (c.auth === "garbage") headers.authorization = c.garbage;
  if (c.event !== undefined) headers["x-github-event"] = c.event;
  if (c.delivery !== undefined) {
    headers["x-github-delivery"] = c.delivery;
    headers["linear-delivery"] = c.delivery;
    headers["idempotency-key"] = c.delivery;
  }
  if (c.encoding !== undefined) headers["content-encoding"] = c.encoding;
  if (c.sign !== "none") {
    const gh = c.sign === "valid" ? hmacHex(SECRETS.DRILL_CODEHOST_SECRET, c.body) : hmacHex("wrong", c.body);
    const lin = c.sign === "valid" ? hmacHex(SECRETS.DRILL_TRACKER_SECRET, c.body) : hmacHex("wrong", c.body);
    headers["x-hub-signature-256"] = `sha256=${gh}`;
    headers["linear-signature"] = lin;
  }
  return { kind: "fuzz", path: c.route, headers, body: c.body };
}

/** Runs `svc config validate --dir <dir>` to completion, bounded. */
function validate(dir: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      join(ROOT, "node_modules/.bin/node"),
      [join(ROOT, "bin/svc.js"), "config", "validate", "--dir", dir],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/", ...SECRETS },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Replaces, deletes or adds the value at a path chosen by `pick` (0..1 numbers) in a copy of `doc`. */
function mutate(
  doc: Json,
  picks: number[],
  action: "replace" | "delete" | "add",
  value: Json,
  key: string,
): Json {
  const copy = structuredClone(doc);
  let node: Json = copy;
  for (const pick of picks) {
    if (node === null || typeof node !== "object") break;
    const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    if (keys.length === 0) break;
    const chosen = keys[Math.floor(pick * keys.length)]!;
    const childNode = (node as Record<string | number, Json>)[chosen]!;
    const last = pick === picks[picks.length - 1] || childNode === null || typeof childNode !== "object";
    if (last) {
      if (action === "delete") {
        if (Array.isArray(node)) node.splice(chosen as number, 1);
        else delete (node as Record<string, Json>)[chosen as string];
      } else if (action === "replace") (node as Record<string | number, Json>)[chosen] = value;
      else if (!Array.isArray(node)) (node as Record<string, Json>)[key] = value;
      else node.push(value);
      return copy;
    }
    node = childNode;
  }
  return copy;
}

describe("drill: fuzzing the webhook routes and the configuration files", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let scratch: string;
  const processes: SvcProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    dir = await writeDrillConfig();
    scratch = await mkdtemp(join(tmpdir(), "svc-drill-fuzz-"));
  });
  afterAll(async () => {
    await stopAll(processes);
    await pool?.end();
    await database?.drop();
    for (const path of [dir, scratch]) if (path) await rm(path, { recursive: true, force: true });
  });

  it("webhook headers and bodies: no 500, no crash, no record from a rejected request", async () => {
    await timed(`${DRILL}-http`, async () => {
      const ingress: IngressProcess = await startIngress("ingress", drillEnv(dir, database.url));
      processes.push(ingress);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const statuses: Record<string, number> = {};
      const accepted = new Set<string>();
      const notFound = new Set<string>();
      const deadline = Date.now() + 240_000;
      let runs = 0;
      try {
        await fc.assert(
          fc.asyncProperty(cases, async (c) => {
            if (Date.now() > deadline) return; // bounded in time as well as in count
            runs++;
            const outcome = await send(agent, ingress.url, toRequest(c), 30_000);
            const key = "status" in outcome ? String(outcome.status) : `error`;
            statuses[key] = (statuses[key] ?? 0) + 1;
            if ("status" in outcome) {
              expect(outcome.status, outcome.body.slice(0, 200)).toBeLessThan(500);
              if (outcome.status === 404 && notFound.size < 8) notFound.add(c.route);
              if (outcome.status === 202) {
                expect(outcome.trigger).toMatch(/^trg_/);
                accepted.add(outcome.trigger!);
              }
            } else {
              // the ingress may close a connection it refused (413); it must not have died
              expect(outcome.error).not.toBe("");
            }
            expect(ingress.alive(), "the ingress process is still running").toBe(true);
          }),
          { numRuns: HTTP_RUNS, seed: SEED, endOnFailure: true },
        );
      } finally {
        agent.destroy();
      }
      const { rows } = await pool.query<{ id: string }>("SELECT id FROM svc.triggers");
      const stray = rows.filter((row) => !accepted.has(row.id)).length;
      printLine(DRILL, "http accounting", {
        runs,
        seed: SEED,
        statuses,
        accepted_distinct_202: accepted.size,
        triggers: rows.length,
        triggers_without_a_202: stray,
        errors_logged: ingress.events.get("http.error") ?? 0,
        paths_answered_404: [...notFound],
      });
      expect(stray).toBe(0);
      expect(rows.length).toBe(accepted.size);
      expect(ingress.events.get("http.error") ?? 0).toBe(0);
      expect(ingress.alive()).toBe(true);
      // the run reached past verification: some fuzzed requests were authentic and stored
      expect(accepted.size).toBeGreaterThan(0);
      expect(Object.keys(statuses).length).toBeGreaterThan(2);
    });
  });

  it("configuration files: the loader reports problems and never throws; `svc config validate` never crashes", async () => {
    await timed(`${DRILL}-config`, async () => {
      const daemon = YAML.parse(await readFile(join(dir, "daemon.yaml"), "utf8")) as Json;
      const pipeline = YAML.parse(await readFile(join(dir, "pipelines/on-hook.yaml"), "utf8")) as Json;
      const target = join(scratch, "cfg");
      const { cp } = await import("node:fs/promises");
      await cp(dir, target, { recursive: true });
      const env = { ...SECRETS };
      let valid = 0;
      let invalid = 0;
      const codes: Record<string, number> = {};
      const mutation = fc.record({
        file: fc.constantFrom("daemon.yaml", "pipelines/on-hook.yaml"),
        picks: fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 1, maxLength: 5 }),
        action: fc.constantFrom("replace", "delete", "add"),
        value: fc.oneof(
          fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
          fc.constantFrom<Json>(
            // environment substitutions, one unset and one set
            "\u0024{NOPE}",
            "\u0024{DRILL_TOKEN}",
            -1,
            0,
            Number.POSITIVE_INFINITY,
            "1m",
            "",
            [],
            {},
          ),
        ),
        key: fc.oneof(
          fc.constantFrom(
            "output",
            "prompt",
            "trigger",
            "targets",
            "webhooks",
            "secret_ref",
            "__proto__",
            "constructor",
          ),
          fc.string({ maxLength: 12 }),
        ),
        raw: fc.option(
          fc.oneof(
            fc.string({ maxLength: 200 }),
            fc.constantFrom(
              "a: &x [*x]",
              "- - - -",
              "{",
              "key: !!binary x",
              `${"a:\n  ".repeat(200)}b`,
              "\u0000",
              "a: 1\na: 2",
            ),
          ),
          { freq: 8, nil: undefined },
        ),
      });
      const written: { file: string; text: string }[] = [];
      await fc.assert(
        fc.asyncProperty(mutation, async (m) => {
          const original = m.file === "daemon.yaml" ? daemon : pipeline;
          const text =
            m.raw ??
            YAML.stringify(
              mutate(original, m.picks, m.action as "replace" | "delete" | "add", m.value, m.key),
            );
          await writeFile(join(target, m.file), text);
          const other = m.file === "daemon.yaml" ? "pipelines/on-hook.yaml" : "daemon.yaml";
          await writeFile(join(target, other), await readFile(join(dir, other), "utf8"));
          const result = await loadConfig({ dir: target, env });
          if (result.ok) valid++;
          else invalid++;
          for (const problem of result.problems) {
            expect(typeof problem.message).toBe("string");
            expect(problem.message.length).toBeGreaterThan(0);
            codes[problem.code] = (codes[problem.code] ?? 0) + 1;
          }
          if (!result.ok) expect(result.problems.length).toBeGreaterThan(0);
          if (written.length < CONFIG_PROCESS_RUNS && (m.raw !== undefined || written.length % 2 === 0))
            written.push({ file: m.file, text });
        }),
        { numRuns: CONFIG_RUNS, seed: SEED, endOnFailure: true },
      );
      // a sample of the same files through the real CLI: exit 0 or 1 and a message, never a stack trace
      const exits: Record<string, number> = {};
      for (const [index, { file, text }] of written.entries()) {
        const caseDir = join(scratch, `proc-${index}`);
        await cp(dir, caseDir, { recursive: true });
        await writeFile(join(caseDir, file), text);
        const { code, output } = await validate(caseDir);
        exits[String(code)] = (exits[String(code)] ?? 0) + 1;
        expect([0, 1], output).toContain(code);
        expect(output).not.toMatch(
          /\n\s+at [^\n]+:\d+:\d+\)?\n|TypeError|RangeError|ReferenceError|Unhandled/,
        );
      }
      printLine(DRILL, "config accounting", {
        loader_runs: valid + invalid,
        seed: SEED,
        loaded: valid,
        refused: invalid,
        problem_codes: Object.keys(codes).length,
        top_codes: Object.fromEntries(
          Object.entries(codes)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 6),
        ),
        cli_runs: written.length,
        cli_exit_codes: exits,
      });
      expect(invalid).toBeGreaterThan(0);
      expect(valid).toBeGreaterThan(0);
    });
  });
});
