import { spawn } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { drillEnv, writeDrillConfig } from "../../drills/support/config.ts";
import { childEnv } from "../../drills/support/processes.ts";

const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");

/** A "database" that accepts connections and never answers: the worker waits there, fully started up to it. */
async function silentDatabase(): Promise<{ server: Server; url: string; connected: Promise<void> }> {
  const sockets: Socket[] = [];
  let onConnect = () => {};
  const connected = new Promise<void>((resolve) => {
    onConnect = resolve;
  });
  const server = createServer((socket) => {
    sockets.push(socket);
    onConnect();
  });
  server.on("close", () => {
    for (const socket of sockets) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { server, url: `postgres://svc@127.0.0.1:${port}/svc`, connected };
}

/** Starts `svc worker` as every start path does (node bin/svc.js worker) and reads its command line once it is connecting. */
async function workerCommandLine(extra: Record<string, string>): Promise<string[]> {
  const database = await silentDatabase();
  const child = spawn(NODE, [join(ROOT, "bin/svc.js"), "worker"], {
    cwd: ROOT,
    env: childEnv({ ...drillEnv(dir, database.url), ...extra }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  try {
    await Promise.race([
      database.connected,
      exited.then(() => {
        throw new Error(`svc worker exited before connecting:\n${stderr}`);
      }),
    ]);
    const cmdline = await readFile(`/proc/${child.pid}/cmdline`, "utf8");
    return cmdline.split("\0").filter(Boolean);
  } finally {
    child.kill("SIGKILL");
    await exited;
    database.server.close();
  }
}

let dir: string;
beforeAll(async () => {
  dir = await writeDrillConfig();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(process.platform !== "linux")("svc worker's young generation", () => {
  it("runs with a bounded young generation, in the process it was started as", async () => {
    const argv = await workerCommandLine({});
    expect(argv).toContain("--max-semi-space-size=16");
    // read from the pid that was spawned: the re-execution replaced the process, it did not start another
    expect(argv.slice(-2)).toEqual([join(ROOT, "bin/svc.js"), "worker"]);
  });

  it("keeps a size the operator chose", async () => {
    const argv = await workerCommandLine({ NODE_OPTIONS: "--max-semi-space-size=8" });
    expect(argv.some((arg) => arg.startsWith("--max-semi-space-size"))).toBe(false);
  });
});
