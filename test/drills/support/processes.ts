import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../support/free-port.ts";

export const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const SVC = join(ROOT, "bin/svc.js");

/** Every child's complete output is kept here, one file per process, for the evidence of a failed drill. */
export const LOG_DIR = process.env.SVC_DRILL_LOG_DIR ?? join(tmpdir(), "svc-drill-logs");

/** How many log lines a process keeps in memory (a soak logs one line per request). */
const KEEP_LINES = 2_000;

export type LogLine = Record<string, unknown>;

/** A real `svc ingress` or `svc worker` child process. */
export interface SvcProcess {
  role: "ingress" | "worker";
  name: string;
  child: ChildProcess;
  /** the file holding everything the process wrote */
  logFile: string;
  pid: number;
  /** the last KEEP_LINES parsed JSON log lines */
  lines: LogLine[];
  /** how many lines matched each `event` over the whole life of the process */
  events: Map<string, number>;
  /** stderr and unparseable stdout, for diagnosing a failed start */
  raw: string[];
  alive(): boolean;
  waitForLine(match: (line: LogLine) => boolean, what: string, boundMs?: number): Promise<LogLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** sends the signal (default SIGTERM) and waits, at most `boundMs`, then SIGKILLs */
  stop(
    signal?: NodeJS.Signals,
    boundMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Environment for a child svc: PATH and HOME, nothing else of ours (no SVC_* or secrets leak in). */
export function childEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/",
    SVC_LOG_FORMAT: "json",
    ...extra,
  };
}

/** `wrap` runs the child through a command prefix, such as `ip netns exec <ns>` (it must exec, not fork). */
export function spawnSvc(
  role: "ingress" | "worker",
  name: string,
  env: Record<string, string>,
  wrap: string[] = [],
): SvcProcess {
  const [command, ...args] = [...wrap, NODE, SVC, role];
  const child = spawn(command!, args, { env, cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = join(LOG_DIR, `${name}-${child.pid}.log`);
  const log = createWriteStream(logFile);
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const lines: LogLine[] = [];
  const events = new Map<string, number>();
  const raw: string[] = [];
  const waiters = new Set<() => void>();
  let exitedAt: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const split = (onLine: (line: string) => void) => {
    let buffer = "";
    return (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      let newline = buffer.indexOf("\n");
      while (newline >= 0) {
        onLine(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf("\n");
      }
      for (const wake of waiters) wake();
    };
  };
  child.stdout!.on(
    "data",
    split((text) => {
      if (!text.trim()) return;
      try {
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        if (lines.length > KEEP_LINES) lines.splice(0, lines.length - KEEP_LINES);
        const event = String(line.event ?? "");
        events.set(event, (events.get(event) ?? 0) + 1);
      } catch {
        raw.push(text);
      }
    }),
  );
  child.stderr!.on(
    "data",
    split((text) => {
      raw.push(text);
      if (raw.length > KEEP_LINES) raw.splice(0, raw.length - KEEP_LINES);
    }),
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      log.end();
      exitedAt = { code, signal };
      resolve(exitedAt);
      for (const wake of waiters) wake();
    }),
  );
  const tail = () => [...raw.slice(-20), ...lines.slice(-10).map((l) => JSON.stringify(l))].join("\n");
  const waitForLine: SvcProcess["waitForLine"] = (match, what, boundMs = 60_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = lines.find(match);
        if (found) {
          done();
          resolve(found);
        } else if (exitedAt) {
          done();
          reject(
            new Error(
              `${name} exited (${exitedAt.code ?? exitedAt.signal}) before logging ${what}:\n${tail()}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name} did not log ${what} within ${boundMs} ms:\n${tail()}`));
      }, boundMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return {
    role,
    name,
    child,
    logFile,
    pid: child.pid ?? -1,
    lines,
    events,
    raw,
    alive: () => exitedAt === undefined,
    waitForLine,
    exited,
    async stop(signal = "SIGTERM", boundMs = 30_000) {
      if (exitedAt) return exitedAt;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), boundMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export interface IngressProcess extends SvcProcess {
  port: number;
  url: string;
}

export async function startIngress(name: string, env: Record<string, string>): Promise<IngressProcess> {
  // a port probed free can be taken before the child binds it: try a few
  for (let attempt = 1; ; attempt++) {
    const proc = spawnSvc("ingress", name, {
      ...env,
      SVC_HOST: "127.0.0.1",
      SVC_PORT: String(await freePort()),
    });
    try {
      const line = await proc.waitForLine((l) => l.event === "ingress.listening", "ingress.listening");
      const port = Number(line.port);
      return Object.assign(proc, { port, url: `http://127.0.0.1:${port}` });
    } catch (error) {
      // a process that did not come up is not left behind
      await proc.stop("SIGKILL", 5_000);
      if (attempt >= 3 || !proc.raw.join("\n").includes("already in use")) throw error;
    }
  }
}

export async function startWorker(
  name: string,
  env: Record<string, string>,
  wrap: string[] = [],
): Promise<SvcProcess> {
  const proc = spawnSvc("worker", name, env, wrap);
  try {
    await proc.waitForLine((l) => l.event === "worker.started", "worker.started");
  } catch (error) {
    await proc.stop("SIGKILL", 5_000);
    throw error;
  }
  return proc;
}

/** Resident memory of a process in KiB (VmRSS of /proc/<pid>/status); undefined once it is gone. */
export async function rssKib(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => undefined);
  const match = status ? /^VmRSS:\s+(\d+)\s+kB/m.exec(status) : null;
  return match ? Number(match[1]) : undefined;
}

/** Kills, then awaits, every process still alive (afterAll). */
export async function stopAll(processes: SvcProcess[], signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  await Promise.all(processes.map((p) => p.stop(signal, 5_000)));
}
