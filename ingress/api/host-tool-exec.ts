import { execFile } from "node:child_process";
import type { HostTool } from "../../shared/config/types.ts";
import { badRequest } from "./errors.ts";

const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_]*)/g;
const TIMEOUT_MS = 120_000;
const MAX_OUTPUT_BYTES = 1024 * 1024;

export interface HostToolResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Checks `input` against the tool's declared fields: undeclared, missing and mistyped fields are refused. */
export function checkToolInput(tool: HostTool, input: unknown): Record<string, string | number | boolean> {
  if (input === undefined || input === null) input = {};
  if (typeof input !== "object" || Array.isArray(input)) throw badRequest('"input" must be an object');
  const problems: string[] = [];
  const out: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    const spec = tool.input[name];
    if (!spec) problems.push(`"${name}" is not an input of host tool ${tool.name}`);
    else if (typeof value !== spec.type) problems.push(`"${name}" must be a ${spec.type}`);
    else out[name] = value as string | number | boolean;
  }
  for (const [name, spec] of Object.entries(tool.input)) {
    if (spec.required && !(name in (input as Record<string, unknown>)))
      problems.push(`"${name}" is required`);
  }
  if (problems.length) throw badRequest(`invalid input: ${problems.join("; ")}`, { problems });
  return out;
}

function substitute(text: string, input: Record<string, string | number | boolean>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => (name in input ? String(input[name]) : ""));
}

/**
 * Runs the tool's explicit executable with no shell: each `args` entry becomes exactly one argv
 * element after `$name` substitution, so input can never add arguments or shell syntax.
 */
export function runHostTool(
  tool: HostTool,
  input: Record<string, string | number | boolean>,
): Promise<HostToolResult> {
  const argv = tool.args.map((arg) => substitute(arg, input));
  return new Promise((resolve, reject) => {
    const child = execFile(
      tool.exec,
      argv,
      {
        shell: false,
        timeout: TIMEOUT_MS,
        maxBuffer: MAX_OUTPUT_BYTES,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...tool.env },
        encoding: "utf8",
      },
      (error, stdout, stderr) => {
        if (
          error &&
          typeof (error as NodeJS.ErrnoException).code === "string" &&
          !("signal" in error && error.signal)
        ) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === "ENOENT" || code === "EACCES") {
            reject(new Error(`host tool ${tool.name}: cannot run ${tool.exec} (${code})`));
            return;
          }
        }
        resolve({
          exitCode: child.exitCode,
          signal: child.signalCode,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
    // a tool that never reads stdin closes the pipe first; that is not a failure of the tool
    child.stdin?.on("error", () => {});
    child.stdin?.end(tool.stdin === undefined ? "" : substitute(tool.stdin, input));
  });
}
