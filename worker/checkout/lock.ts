import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";

/**
 * A lock between the worker processes of one host on a repository mirror: flock(2) on a lock file,
 * held by a `flock` child (util-linux) for as long as the lock is ours. Node has no flock, and a
 * lock of the kernel's is released when its holder dies however it dies, so a worker killed in the
 * middle of a fetch never leaves a mirror locked (a lock file of our own would need a staleness
 * guess). The child holds the lock until its stdin closes: our release, or our death.
 *
 * `shared`: many holders at once (runs using the mirror); `exclusive`: one (a fetch, an eviction).
 */
export interface HeldLock {
  /** resolves once the holder is gone: the lock is free for others then, not before */
  release(): Promise<void>;
}

export function lockFile(
  path: string,
  mode: "shared" | "exclusive",
  options: { wait: boolean },
): Promise<HeldLock | undefined> {
  // made first, so that flock never creates it with another mode than ours
  closeSync(openSync(path, "a", 0o600));
  return new Promise((resolve, reject) => {
    const flags = [mode === "shared" ? "--shared" : "--exclusive", ...(options.wait ? [] : ["--nonblock"])];
    // `cat` holds the lock until our end of its stdin closes; "locked" says it was taken
    const child = spawn(
      "flock",
      [...flags, "--conflict-exit-code", "75", path, "sh", "-c", "echo locked; exec cat"],
      {
        stdio: ["pipe", "pipe", "pipe"],
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      },
    );
    let settled = false;
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const gone = new Promise<void>((done) => child.once("close", () => done()));
    child.stdout.once("data", () => {
      settled = true;
      // held: a worker that exits while holding it must not wait for the holder, which dies with us
      // (its stdin closes). Until then the child keeps the caller's wait alive
      child.unref();
      for (const stream of [child.stdout, child.stderr, child.stdin]) unref(stream);
      resolve({
        release() {
          // awaited: the holder's exit must keep the caller alive, as its wait did
          child.ref();
          child.stdin.end();
          return gone;
        },
      });
    });
    child.on("error", (error) => {
      if (!settled)
        reject(
          new Error(`flock could not run (util-linux is needed on the worker's host): ${error.message}`),
        );
    });
    child.on("close", (code) => {
      if (settled) return;
      if (code === 75) resolve(undefined);
      else reject(new Error(`flock ${path} ended with ${code}: ${stderr.trim()}`));
    });
  });
}

function unref(stream: unknown): void {
  (stream as { unref?: () => void }).unref?.();
}
