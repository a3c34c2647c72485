import { fchownSync } from "node:fs";
import { walkNoFollow } from "../../../shared/no-follow.ts";
import type { NumericUser } from "./user.ts";

/** The worker may not give files away (it is not root, nor the container's user): the run cannot use its sandbox. */
export class HandOverError extends Error {}

/**
 * Makes a run folder the container user's: every directory and regular file under `dir` is
 * fchown'd through a descriptor opened without following a link (shared/no-follow.ts), never
 * by path, and modes stay as they were (0700 folders; nothing is opened to other users). Called
 * before a container starts, while none of the run's processes is alive; links, FIFOs and devices
 * are left alone, and so is a file with other hard links, which may name a file outside the run.
 * A worker that may not change owners (not root) fails with HandOverError unless the files are
 * the container user's already (a worker running as that very uid).
 */
export function handOver(dir: string, user: NumericUser): void {
  walkNoFollow(dir, {
    visit(fd, stats) {
      // the owner is what counts: run folders and the agent's files are the owner's alone (0700, 0600)
      if (stats.uid === user.uid) return;
      if (stats.isFile() && stats.nlink > 1) return;
      try {
        fchownSync(fd, user.uid, user.gid);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
        const own = process.getuid?.();
        throw new HandOverError(
          `the worker (uid ${own}) may not give the run's folders to the container's user ${user.uid}:${user.gid} - run the worker as root, or as uid ${user.uid} (the container's user: the image's USER, else "sandboxes.user"); svc never opens them to every user instead`,
        );
      }
    },
  });
}
