import { join } from "node:path";
import type { CheckoutSettings } from "../../shared/config/types.ts";
import type { GitAuth } from "./credentials.ts";
import { COMMIT_ID, FETCH, GitError, git } from "./git.ts";

/** What a run's worktree holds beside its head, as computed in the mirror (which holds whole histories). */
export interface Plan {
  head: string;
  /** a pull request's base commit, and the ref the worktree names it by (`refs/remotes/origin/<base>`) */
  base?: { sha: string; ref: string };
  mergeBase?: string;
  /** the concurrency group's last reviewed head, kept only when it is an ancestor of `head` */
  previous?: string;
  /** the `--depth` of the worktree's fetch; undefined: the whole history */
  depth?: number;
}

async function count(mirror: string, range: string): Promise<number> {
  return Number((await git(["--git-dir", mirror, "rev-list", "--count", range])).trim());
}

async function isAncestor(mirror: string, ancestor: string, of: string): Promise<boolean> {
  try {
    await git(["--git-dir", mirror, "merge-base", "--is-ancestor", ancestor, of]);
    return true;
  } catch (error) {
    if (error instanceof GitError && error.exitCode === 1) return false;
    throw error;
  }
}

/**
 * The depth a worktree needs: the head's commit (and the pipeline's `depth`), and for a pull request
 * every commit from the head and from the base down to their merge base, so `git diff
 * "$BASE_SHA...HEAD"` finds it; down to the previous reviewed head too, so `git diff "$PREVIOUS_SHA"
 * HEAD` works. Commits on any path from a tip to an ancestor are in `ancestor..tip`, so its count
 * plus one reaches the ancestor whichever path git's depth walk takes.
 */
export async function planWorktree(
  mirror: string,
  wanted: { head: string; base?: { sha: string; ref: string }; previous?: string },
  settings: Pick<CheckoutSettings, "depth">,
): Promise<Plan> {
  const plan: Plan = { head: wanted.head };
  let depth = typeof settings.depth === "number" ? settings.depth : 1;
  if (wanted.base) {
    plan.base = wanted.base;
    try {
      plan.mergeBase = (await git(["--git-dir", mirror, "merge-base", wanted.head, wanted.base.sha])).trim();
    } catch (error) {
      // unrelated histories: there is no merge base, and `BASE_SHA...HEAD` has nothing to name
      if (!(error instanceof GitError && error.exitCode === 1)) throw error;
    }
    if (plan.mergeBase) {
      depth = Math.max(
        depth,
        (await count(mirror, `${plan.mergeBase}..${wanted.head}`)) + 1,
        (await count(mirror, `${plan.mergeBase}..${wanted.base.sha}`)) + 1,
      );
    }
  }
  const previous = wanted.previous;
  if (previous && COMMIT_ID.test(previous) && previous !== wanted.head) {
    const known = await git(["--git-dir", mirror, "cat-file", "-e", `${previous}^{commit}`]).then(
      () => true,
      () => false, // a head the mirror never had, or one pruned since: not an ancestor we can show
    );
    if (known && (await isAncestor(mirror, previous, wanted.head))) {
      plan.previous = previous;
      depth = Math.max(depth, (await count(mirror, `${previous}..${wanted.head}`)) + 1);
    }
  } else if (previous === wanted.head) plan.previous = previous;
  if (settings.depth !== "full") plan.depth = depth;
  return plan;
}

/**
 * Writes a run's worktree into `dest` (an empty folder) from the mirror: a repository of its own,
 * never borrowing the mirror's objects through `alternates` (a run's `git gc` could prune them, its
 * writes reach them). `linked`, for a run on the worker's host: the mirror's pack files are
 * hardlinked (`git clone --local`), which costs no copy whatever the history; git never writes a
 * pack in place, and the run's own gc only unlinks its links. Otherwise (a sandboxed run, whose
 * folders are handed to its container's user: no inode of the cache may be among them) the objects
 * the plan needs are copied by a local fetch. HEAD is detached at the head; the base is
 * `refs/remotes/origin/<base ref>`. The worktree's config names origin's URL and holds no credential.
 */
export async function writeWorktree(
  mirror: string,
  dest: string,
  plan: Plan,
  settings: CheckoutSettings,
  auth: GitAuth,
  linked: boolean,
): Promise<void> {
  const inDest = (args: string[], env: Record<string, string> = {}) => git(["-C", dest, ...args], { env });
  const refs = [`update refs/svc/head ${plan.head}`];
  if (plan.base) refs.push(`update refs/remotes/origin/${plan.base.ref} ${plan.base.sha}`);
  if (plan.previous && plan.previous !== plan.head) refs.push(`update refs/svc/previous ${plan.previous}`);
  // no template: no sample hooks, nothing but what git needs
  if (linked)
    await git([
      "clone",
      "--quiet",
      "--local",
      "--no-checkout",
      "--no-tags",
      "--template=",
      "--",
      mirror,
      dest,
    ]);
  else await git(["init", "--quiet", "--template=", dest]);
  // origin is the clean URL (no user:password): relative submodule URLs and git-lfs resolve against it
  await inDest(["config", "remote.origin.url", auth.url]);
  // the tree is written from the mirror beside the object copy (a copy's two halves take about as
  // long each, and run on two cores); read-tree reads the mirror and writes only the worktree and
  // its index. A linked worktree holds every object already and writes its tree itself
  const writeTree = () =>
    linked
      ? inDest(["read-tree", "-u", "--reset", plan.head])
      : git(["--git-dir", mirror, "--work-tree", dest, "read-tree", "-u", "--reset", plan.head], {
          env: { GIT_INDEX_FILE: join(dest, ".git", "index") },
        });
  const objects = linked
    ? git(["-C", dest, "update-ref", "--stdin"], { input: `${refs.join("\n")}\n` })
    : inDest([
        ...FETCH,
        // the mirror's side, which a local fetch does not give the fetch's -c: any commit it holds may
        // be asked for (what the plan names is what it computed), and no delta search (the pack is
        // local and short-lived: the search cost most of its time and saved nothing the disk notices)
        "--upload-pack=git -c uploadpack.allowAnySHA1InWant=true -c pack.window=0 upload-pack",
        ...(plan.depth !== undefined ? [`--depth=${plan.depth}`] : []),
        ...["--", `file://${mirror}`, ...refs.map((line) => `+${line.split(" ")[2]}:${line.split(" ")[1]}`)],
      ]);
  if (settings.paths.length > 0) {
    await objects;
    await inDest(["sparse-checkout", "set", "--cone", "--", ...settings.paths]);
    await inDest(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", plan.head]);
  } else {
    const [copied, written] = await Promise.allSettled([objects, writeTree()]);
    if (copied.status === "rejected") throw copied.reason;
    if (written.status === "rejected") throw written.reason;
    // the index and the files are the head's already: HEAD is detached at it, nothing to rewrite
    await inDest(["update-ref", "--no-deref", "HEAD", plan.head]);
  }
  if (settings.submodules !== false) {
    // submodules as the run's identity: the header reaches the code host's origin only; file:// and
    // ext:: URLs of a hostile .gitmodules are refused
    await inDest(
      [
        ...["-c", "protocol.file.allow=never", "-c", "protocol.ext.allow=never"],
        "submodule",
        "update",
        "--init",
        ...(settings.submodules === "recursive" ? ["--recursive"] : []),
        "--quiet",
      ],
      auth.env,
    );
  }
  if (settings.lfs) {
    await inDest(["lfs", "install", "--local", "--skip-smudge"]).catch((error: unknown) => {
      throw new GitError(
        ["lfs"],
        error instanceof GitError ? error.exitCode : null,
        'checkout.lfs needs git-lfs on the worker\'s host ("git lfs" is not installed: apt-get install git-lfs)',
      );
    });
    await inDest(["lfs", "pull"], { ...auth.env, GIT_LFS_SKIP_SMUDGE: "0" });
  }
}
