import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const SVC = join(ROOT, "bin/svc.js");

/** Environment for a child svc: the parent's PATH, nothing else that could leak in (SVC_* or secrets). */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, SVC_LOG_FORMAT: "json", ...extra };
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/** A temporary configuration directory holding the given files (paths relative to it). */
export async function configDir(files: Record<string, string>): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), "svc-e2e-")), ".svc");
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion. */
export function runSvc(args: string[], env: NodeJS.ProcessEnv): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [SVC, ...args], { env, cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface RunningIngress {
  child: ChildProcess;
  port: number;
  url: string;
  stdout(): string;
  stderr(): string;
  /** parsed JSON log lines so far */
  lines(): Record<string, unknown>[];
  /** resolves with the first log line that satisfies `match` (already written or still to come) */
  waitForLine(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  exited: Promise<Finished>;
}

/** Starts `svc ingress` as a real process and resolves once it logs `ingress.listening`. */
export async function startIngressProcess(env: NodeJS.ProcessEnv): Promise<RunningIngress> {
  const child = spawn(NODE, [SVC, "ingress"], { env, cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let pending = "";
  const lines: Record<string, unknown>[] = [];
  const waiters: {
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }[] = [];
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk;
    pending += chunk;
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    for (const part of parts) {
      if (!part.trim()) continue;
      const line = JSON.parse(part) as Record<string, unknown>;
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<Finished>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  const waitForLine = (match: (line: Record<string, unknown>) => boolean) => {
    const seen = lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      waiters.push({ match, resolve });
      void exited.then((finished) =>
        reject(
          new Error(
            `svc ingress exited (${finished.code ?? finished.signal}) first:\n${finished.stderr}${finished.stdout}`,
          ),
        ),
      );
    });
  };
  const listening = await waitForLine((line) => line.event === "ingress.listening");
  const port = Number(listening.port);
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    lines: () => lines,
    waitForLine,
    exited,
  };
}

export const RELEASER_PERSONA = `---
name: releaser
description: Writes release notes.
policies: []
---
You write short release notes.
`;

export function daemonYaml(sources: string, extra = ""): string {
  return `server:
  host: 127.0.0.1
  port: 7420
webhooks:
  sources:
${sources}
targets:
  local:
    runtime: command
    command: ["cat"]
    timeout: 1m
ask:
  targets: [local]
${extra}`;
}
