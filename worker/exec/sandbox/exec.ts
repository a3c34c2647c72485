import { closeSync, openSync, write } from "node:fs";
import { Writable } from "node:stream";
import type Docker from "dockerode";
import type { ChildExit, ChildSpec } from "../process.ts";

/**
 * Runs one argv inside a started container (an engine exec), the way startChild runs it on the
 * host: stdout and stderr go to the log file as they arrive, stdout is also kept when captured,
 * stdin is written and closed. The exec ends when its process exits or when its container is
 * removed (a timeout or a cancellation); the exit code is then read from the engine.
 */
export async function execInContainer(
  container: Docker.Container,
  spec: Omit<ChildSpec, "logFile"> & { logFile: string },
): Promise<ChildExit> {
  let log: number;
  try {
    log = openSync(spec.logFile, spec.truncate ? "w" : "a");
  } catch (error) {
    return failedStart(`cannot open the log ${spec.logFile}: ${(error as Error).message}`);
  }
  let stdout = "";
  let writes = Promise.resolve();
  const append = (chunk: Buffer) => {
    // in arrival order, one after another; a failed write loses log text, never the result
    writes = writes.then(() => new Promise((resolve) => write(log, chunk, () => resolve())));
  };
  const sink = (keep: boolean) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (keep) stdout += chunk.toString("utf8");
        append(chunk);
        done();
      },
    });
  try {
    const exec = await container.exec({
      Cmd: spec.argv,
      Env: Object.entries(spec.env).map(([name, value]) => `${name}=${value}`),
      WorkingDir: spec.cwd,
      AttachStdin: spec.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    const stream = await exec.start({ hijack: true, stdin: spec.stdin !== undefined });
    const ended = new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      // a stream cut by the container's removal ends the exec like any other end
      stream.once("error", () => resolve());
    });
    container.modem.demuxStream(stream, sink(spec.captureStdout === true), sink(false));
    if (spec.stdin !== undefined) stream.end(spec.stdin);
    await ended;
    const exitCode = await exec
      .inspect()
      .then((info) => (info.Running ? null : info.ExitCode))
      .catch(() => null); // the container is gone: the process was killed with it
    await writes;
    return { exitCode, signal: exitCode === null ? "SIGKILL" : null, stdout };
  } catch (error) {
    await writes;
    return { exitCode: null, signal: null, stdout, spawnError: (error as Error).message };
  } finally {
    closeSync(log);
  }
}

function failedStart(spawnError: string): ChildExit {
  return { exitCode: null, signal: null, stdout: "", spawnError };
}
