import { spawn } from "node:child_process";
import { mkdir, open, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `svc daemon start|stop|restart|status`: both roles as detached background processes of this
 * host, each with a pid file and a log file under `<config dir>/run/`.
 */
export const ROLES = ["ingress", "worker"] as const;
export type Role = (typeof ROLES)[number];

/** the event each role logs once it is serving */
const READY_EVENT: Record<Role, string> = { ingress: "ingress.listening", worker: "worker.started" };
const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "svc.js");
const START_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 60_000;

export function runDir(configDir: string): string {
  return join(configDir, "run");
}

export function pidPath(configDir: string, role: Role): string {
  return join(runDir(configDir), `${role}.pid`);
}

export function logPath(configDir: string, role: Role): string {
  return join(runDir(configDir), `${role}.log`);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The pid of a running role, or undefined; a pid file whose process is gone is removed. */
export async function runningPid(configDir: string, role: Role): Promise<number | undefined> {
  const text = await readFile(pidPath(configDir, role), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  const pid = Number(text.trim());
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) return pid;
  await rm(pidPath(configDir, role), { force: true });
  return undefined;
}

export interface Started {
  role: Role;
  pid: number;
  /** fields of the ready log line, e.g. `port` of the ingress */
  ready: Record<string, unknown>;
  alreadyRunning: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startRole(configDir: string, role: Role, env: NodeJS.ProcessEnv): Promise<Started> {
  const existing = await runningPid(configDir, role);
  if (existing) return { role, pid: existing, ready: {}, alreadyRunning: true };
  await mkdir(runDir(configDir), { recursive: true });
  const log = logPath(configDir, role);
  const offset = (await stat(log).catch(() => undefined))?.size ?? 0;
  const handle = await open(log, "a", 0o600);
  const child = spawn(process.execPath, [BIN, role], {
    detached: true,
    stdio: ["ignore", handle.fd, handle.fd],
    // JSON lines in the log file whatever the terminal; the config dir pinned so the child finds the same one
    env: { ...env, SVC_CONFIG_DIR: configDir, SVC_LOG_FORMAT: "json" },
  });
  await handle.close();
  const pid = child.pid;
  if (!pid) throw new Error(`could not start svc ${role}`);
  let exited: number | null | undefined;
  child.on("exit", (code) => {
    exited = code;
  });
  child.unref();
  await writeFile(pidPath(configDir, role), `${pid}\n`, { mode: 0o644 });

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const text = (await readFile(log, "utf8").catch(() => "")).slice(offset);
    for (const line of text.split("\n")) {
      if (!line.includes(READY_EVENT[role])) continue;
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry.event === READY_EVENT[role]) return { role, pid, ready: entry, alreadyRunning: false };
      } catch {
        // a partial line: read again
      }
    }
    if (exited !== undefined || !isAlive(pid)) {
      await rm(pidPath(configDir, role), { force: true });
      throw new Error(
        `svc ${role} exited during start-up (code ${exited ?? "?"}); its log ${log} ends with:\n${tail(text)}`,
      );
    }
    if (Date.now() > deadline) {
      throw new Error(
        `svc ${role} (pid ${pid}) did not report ready within ${START_TIMEOUT_MS / 1000}s; see ${log}`,
      );
    }
    await sleep(100);
  }
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** SIGTERM, then wait for the drain to finish; SIGKILL only after the stop timeout. */
export async function stopRole(
  configDir: string,
  role: Role,
): Promise<{ role: Role; pid?: number; killed: boolean }> {
  const pid = await runningPid(configDir, role);
  if (!pid) return { role, killed: false };
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  let killed = false;
  while (isAlive(pid)) {
    if (Date.now() > deadline && !killed) {
      process.kill(pid, "SIGKILL");
      killed = true;
    }
    await sleep(100);
  }
  await rm(pidPath(configDir, role), { force: true });
  return { role, pid, killed };
}
