import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real CLI in a child process, with only the environment given (never the test runner's). */
export function svc(args: string[], env: Record<string, string>, stdin?: string): Promise<Run> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? "", NO_COLOR: "1" };
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [join(ROOT, "bin/svc.js"), ...args], {
      cwd: ROOT,
      env: { ...base, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? "");
  });
}

export function daemonYaml(): string {
  return `server:
  host: 127.0.0.1
  port: 7420

webhooks:
  sources:
    hello:
      verify: bearer
      secret: \${HELLO_TOKEN}

targets:
  echo:
    runtime: command
    command: ["cat"]
    timeout: 1m

ask:
  targets: [echo]

auth:
  tokens:
    reader:
      scopes: [triggers:read]
      secret: \${READER_TOKEN}
    legacy:
      scopes: [pipelines:*]
      secret: \${LEGACY_TOKEN}
`;
}

export const PIPELINE_YAML = `version: 1.0.0
agent: helper
trigger:
  webhook: [hello]
targets: [echo]
instructions: |
  Say hello.
`;

export const PERSONA_MD = `---
name: helper
description: Says hello.
---
You say hello.
`;

/** A port free right now on loopback (the config refuses SVC_PORT=0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
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
