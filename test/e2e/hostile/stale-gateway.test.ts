import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { request } from "node:http";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";

/** The folder of a worker's gateway socket, as its `gateway.listening` line names the socket. */
async function socketDirOf(worker: RoleProcess): Promise<string> {
  const line = await worker.waitForLog((l) => l.event === "gateway.listening", "gateway.listening");
  return dirname(String(line.socket));
}

/** The status a gateway answers a tokenless model call with, over its unix socket. */
function statusOver(socketPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ socketPath, method: "POST", path: "/v1/responses" }, (incoming) => {
      incoming.resume();
      resolve(incoming.statusCode ?? 0);
    });
    outgoing.on("error", reject);
    outgoing.end("{}");
  });
}

/** This test process's start time, field 22 of /proc/self/stat, as a gateway names its folder by. */
function ownStartTime(): string {
  const stat = readFileSync("/proc/self/stat", "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!;
}

/**
 * A worker killed with SIGKILL (the OOM killer, a `kill -9`) never runs its close(): its gateway's
 * socket folder stays in the workspaces folder, one more after every such death. The next worker
 * to start removes it, and only it: the host's other workers share the workspaces folder, and a
 * live one's folder (listening, or made by a live process that is about to listen) is kept.
 */
describe("hostile: a SIGKILLed worker's gateway folder", { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let dir: string;
  const workers: RoleProcess[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir(
      {
        "daemon.yaml": `targets:
  echo: { runtime: command, command: ["./bin/answer"], timeout: 30s }
ask:
  targets: [echo]
worker:
  concurrency: 1
`,
        "bin/answer": `#!/bin/sh\ncat > /dev/null\necho '{}'\n`,
      },
      ["bin/answer"],
    );
    env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url };
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is removed when the next worker starts; a live worker's folder is kept", async () => {
    const start = async () => {
      const worker = await startWorkerProcess(env);
      workers.push(worker);
      return worker;
    };
    const live = await start();
    const killed = await start();
    const [liveDir, killedDir] = [await socketDirOf(live), await socketDirOf(killed)];
    expect(dirname(liveDir)).toBe(join(dir, "workspaces"));
    // a live process's folder before its socket listens (this test's process, by its start time),
    // and one named by a live pid that another, earlier process had (its start time differs)
    const starting = join(dir, "workspaces", `.gateway-${process.pid}-${ownStartTime()}-starting`);
    const reused = join(dir, "workspaces", `.gateway-${process.pid}-1-reused`);
    for (const planted of [starting, reused]) await mkdir(planted, { mode: 0o700 });

    killed.child.kill("SIGKILL");
    await killed.exited;
    expect(existsSync(join(killedDir, "gateway.sock")), "SIGKILL left the socket behind").toBe(true);

    const next = await start();
    const nextDir = await socketDirOf(next);
    expect(existsSync(killedDir), "the killed worker's folder").toBe(false);
    expect(existsSync(reused), "the folder of a pid's earlier process").toBe(false);
    expect(existsSync(join(liveDir, "gateway.sock")), "the live worker's socket").toBe(true);
    expect(existsSync(starting), "the folder of a live process about to listen").toBe(true);
    expect(existsSync(nextDir)).toBe(true);

    // the live worker still answers on its socket: a model call without a token is refused
    expect(await statusOver(join(liveDir, "gateway.sock"))).toBe(401);
  });
});
