import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../../db/embedded.ts";
import { freePort, ROOT } from "./processes.ts";

describe("svc dev from a fresh checkout", () => {
  let work: string | undefined;
  afterAll(async () => {
    if (!work) return;
    // dev leaves the embedded Postgres running for the next start, as the daemon does; the test stops it
    await (await startEmbeddedPostgres({ dataDir: join(work, ".svc", "data", "postgres") })).stop();
    await rm(work, { recursive: true, force: true });
  });

  it("writes a starter configuration, starts the embedded Postgres, runs the starter pipeline for a webhook, and stops on SIGTERM", async () => {
    work = await mkdtemp(join(tmpdir(), "svc-dev-"));
    // as root the embedded server runs as the postgres user, which must be able to enter this directory
    await chmod(work, 0o755);
    const port = await freePort();
    const child = spawn(join(ROOT, "node_modules/.bin/node"), [join(ROOT, "bin/svc.js"), "dev"], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output: string[] = [];
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout }).on("line", (line) => {
        output.push(line);
        if (/^ingress +\| .*ingress\.listening/.test(line)) resolve();
      });
      void exited.then((code) =>
        reject(new Error(`svc dev exited (${code}):\n${output.join("\n")}\n${stderr}`)),
      );
    });
    expect(output[0]).toContain("did not exist; wrote a starter configuration");

    const daemon = await readFile(join(work, ".svc", "daemon.yaml"), "utf8");
    const token = /secret: (\S+)/.exec(daemon)![1]!;
    const response = await fetch(`http://127.0.0.1:${port}/webhooks/hello`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ hello: "world" }),
    });
    expect(response.status).toBe(202);
    const { trigger } = (await response.json()) as { trigger: string };

    // the starter pipeline runs through the worker: setup step, stand-in agent, completed
    const embedded = await startEmbeddedPostgres({
      dataDir: join(work, ".svc", "data", "postgres"),
      database: "svc",
    });
    const client = new pg.Client({ connectionString: embedded.url });
    await client.connect();
    let outcome:
      | { trigger_status: string; invocation_status: string | null; artifacts: string[] }
      | undefined;
    for (let attempt = 0; attempt < 300; attempt += 1) {
      const { rows } = await client.query(
        `SELECT t.status AS trigger_status, i.status AS invocation_status,
                array(SELECT a.name FROM svc.artifacts a WHERE a.invocation_id = i.id ORDER BY a.name) AS artifacts
           FROM svc.triggers t
           LEFT JOIN svc.workloads w ON w.trigger_id = t.id
           LEFT JOIN svc.invocations i ON i.workload_id = w.id
          WHERE t.id = $1`,
        [trigger],
      );
      outcome = rows[0];
      if (outcome && ["completed", "error", "discarded"].includes(outcome.trigger_status)) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    await client.end();
    expect(outcome?.trigger_status).toBe("completed");
    expect(outcome?.invocation_status).toBe("completed");
    expect(outcome?.artifacts).toContain("surface/event.json");

    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output.some((line) => /^ingress +\| .*ingress\.stopped/.test(line))).toBe(true);
    // readable, not JSON: a person reads these lines
    expect(
      output.filter((line) => line.startsWith("ingress")).every((line) => !line.slice(10).startsWith("{")),
    ).toBe(true);
    expect(output.join("\n")).not.toContain(token);
  }, 120_000);
});
