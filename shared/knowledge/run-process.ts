import { spawn } from "node:child_process";

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** the executable could not be started (ENOENT, EACCES ...) */
  spawnError?: string;
  timedOut: boolean;
}

export interface ProcessOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  stdin?: string;
  timeoutMs: number;
  /** called with each complete stdout line as it arrives (progress) */
  onLine?: (line: string) => void;
}

/** Runs one helper executable (qmd, the embedder runner) without a shell and collects its output. */
export function runProcess(argv: string[], options: ProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const [file, ...args] = argv;
    const child = spawn(file ?? "", args, {
      env: options.env,
      cwd: options.cwd,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let pending = "";
    let timedOut = false;
    let spawnError: string | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => {
      out.push(chunk);
      if (!options.onLine) return;
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) options.onLine(line);
    });
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", (error: NodeJS.ErrnoException) => {
      spawnError = error.code ?? error.message;
    });
    // a child that exits without reading its stdin makes the write fail with EPIPE: its exit code tells
    child.stdin.on("error", () => {});
    child.stdin.end(options.stdin ?? "");
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        timedOut,
        ...(spawnError ? { spawnError } : {}),
      });
    });
  });
}
