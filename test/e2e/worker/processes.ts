import { type ChildProcess, spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../support/free-port.ts";
import { postSignedPullRequest } from "../outputs/pull-request.ts";

const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "bin", "svc.js");

export interface RoleProcess {
  child: ChildProcess;
  /** parsed JSON log lines, in order */
  logs: Record<string, unknown>[];
  /** raw output, for diagnosing a failed start */
  output: string[];
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    what: string,
    boundMs?: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  /** sends the signal and waits for the exit */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs `svc <role>` as a real child process (the pinned Node 24 that runs this test). `wrapper` is a
 * command line that runs it (it ends by executing its arguments), to change the process's world as
 * an operator's host would (its /etc/resolv.conf, say).
 */
export function startRole(
  role: "ingress" | "worker",
  env: Record<string, string>,
  wrapper: string[] = [],
): RoleProcess {
  const argv = [...wrapper, process.execPath, BIN, role];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/",
      SVC_LOG_FORMAT: "json",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  const output: string[] = [];
  const waiters = new Set<() => void>();
  let buffer = "";
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      output.push(line);
      try {
        logs.push(JSON.parse(line));
      } catch {
        // not a log line (oclif error output)
      }
      newline = buffer.indexOf("\n");
    }
    for (const wake of waiters) wake();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    for (const wake of waiters) wake();
  });
  const waitForLog: RoleProcess["waitForLog"] = (match, what, boundMs = 60_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = logs.find(match);
        if (found) {
          cleanup();
          resolve(found);
        } else if (hasExited) {
          cleanup();
          reject(new Error(`${role} exited before logging ${what}:\n${output.slice(-30).join("\n")}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`gave up waiting for ${role} to log ${what}:\n${output.slice(-30).join("\n")}`));
      }, boundMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return {
    child,
    logs,
    output,
    waitForLog,
    exited,
    async stop(signal = "SIGTERM") {
      if (!hasExited) child.kill(signal);
      return exited;
    },
  };
}

export async function startIngress(env: Record<string, string>): Promise<{ role: RoleProcess; url: string }> {
  const role = startRole("ingress", { SVC_PORT: String(await freePort()), SVC_HOST: "127.0.0.1", ...env });
  const line = await role.waitForLog((l) => l.event === "ingress.listening", "ingress.listening");
  return { role, url: `http://127.0.0.1:${line.port}` };
}

export async function startWorkerProcess(
  env: Record<string, string>,
  wrapper: string[] = [],
): Promise<RoleProcess> {
  const role = startRole("worker", env, wrapper);
  await role.waitForLog((l) => l.event === "worker.started", "worker.started");
  return role;
}

/** A configuration directory laid out as operators keep it. */
export async function writeConfigDir(
  files: Record<string, string>,
  executables: string[] = [],
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-e2e-worker-"));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  for (const path of executables) await chmod(join(dir, path), 0o755);
  return dir;
}

export async function postWebhook(url: string, name: string, token: string, body: unknown): Promise<string> {
  const response = await fetch(`${url}/webhooks/${name}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`webhook ${name} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { trigger: string }).trigger;
}

/** A `pull_request` delivery to the `github` source, signed with `secret` as GitHub signs it. */
export async function postPullRequest(url: string, secret: string, payload: unknown): Promise<string> {
  const response = await postSignedPullRequest(url, secret, payload);
  const text = await response.text();
  if (response.status !== 202) throw new Error(`the github webhook answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { trigger: string }).trigger;
}
