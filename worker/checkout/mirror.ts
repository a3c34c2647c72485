import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { GitAuth } from "./credentials.ts";
import { commitsHeld, FETCH, GitError, git, hasCommit } from "./git.ts";
import { lockFile } from "./lock.ts";

/**
 * One commit a run needs in the mirror: by its id when the event names it (github.com and GitLab
 * serve every reachable commit by id), else by `remoteRef`, which is also the fallback when the
 * host refuses the id. `keepRef` is the mirror's own ref for it, so maintenance never prunes what
 * a run fetched (refs/pull/<n>/head, refs/heads/<branch>).
 */
export interface Want {
  sha?: string;
  remoteRef?: string;
  keepRef: string;
  /**
   * a pull request's base: when the host no longer has the commit the event stated (the base branch
   * was force-pushed since), the branch's commit now stands for it, and without either the run goes
   * on without a base (its commit is "")
   */
  base?: boolean;
}

/** What a fetch did for one run. */
export interface Fetched {
  /** the commit each want resolved to, in order */
  commits: string[];
  /** bytes the round's fetches added to the mirror as packs (a thin pack completed with its bases); 0 when it held everything */
  bytes: number;
  /** the mirror was made by this fetch */
  cold: boolean;
}

/** A commit the host does not have: the message names it and every ref tried. */
export class MissingCommitError extends Error {}

/** The host refused the identity (401, 403, or a 404 that hides a private repository). */
export class RefusedError extends Error {}

interface Request {
  wants: Want[];
  auth: GitAuth;
  resolve(fetched: Fetched): void;
  reject(error: unknown): void;
}

/**
 * A repository's bare mirror on this host. Runs ask for commits; the requests that arrive while a
 * fetch waits for the lock or runs are fetched together by the next one (one fetch per identity
 * among them), so runs of one repository at once share a fetch. The lock (lock.ts) is the host's:
 * another worker process's fetch of the same mirror waits too. A mirror is made in a temporary
 * folder and renamed into place, so no run ever sees half of one.
 */
export class Mirror {
  readonly path: string;
  readonly #pending: Request[] = [];
  #draining = false;
  #checked = false;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * The wants' commits in the mirror with their whole history, fetched as `auth` when it lacks
   * them. A mirror is never shallow: what a later fetch needs is what is new since, and a run's
   * checkout takes the depth it needs from it (worktree.ts).
   */
  ensure(wants: Want[], auth: GitAuth): Promise<Fetched> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ wants, auth, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#pending.length > 0) {
        const lock = await lockFile(`${this.path}.lock`, "exclusive", { wait: true }).catch(
          (error: unknown) => {
            for (const request of this.#pending.splice(0)) request.reject(error);
            return undefined;
          },
        );
        if (!lock) continue;
        // everything asked for while the lock was awaited goes into this round
        const batch = this.#pending.splice(0);
        try {
          await this.#round(batch);
        } catch (error) {
          for (const request of batch) request.reject(error);
        } finally {
          await lock.release();
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  /** One round under the lock: the mirror made or checked, then one fetch per identity of the batch. */
  async #round(batch: Request[]): Promise<void> {
    // once per process: a mirror left by a crash, a full disk or a hand is not trusted unchecked
    if (!this.#checked && existsSync(join(this.path, "HEAD")) && !(await this.isSound()))
      await this.rebuild();
    this.#checked = true;
    const cold = !existsSync(join(this.path, "HEAD"));
    if (cold) await this.#create();
    const groups = new Map<string, Request[]>();
    for (const request of batch) {
      const key = `${request.auth.url}\n${request.auth.secret ?? ""}`;
      groups.set(key, [...(groups.get(key) ?? []), request]);
    }
    let fetched = 0;
    for (const requests of groups.values()) {
      const packsBefore = packSizes(this.path);
      let error: unknown;
      const results: (string[] | undefined)[] = [];
      try {
        await this.#fetch(requests);
      } catch (caught) {
        error = caught;
      }
      for (const request of requests) {
        try {
          results.push(await this.#resolveWants(request, error));
        } catch (caught) {
          request.reject(caught);
          results.push(undefined);
        }
      }
      // what the round's fetches added, the fallbacks' included
      const bytes = newBytes(packsBefore, packSizes(this.path));
      fetched += bytes;
      requests.forEach((request, index) => {
        const commits = results[index];
        // the bytes are the round's: the runs that shared the fetch share its figure
        if (commits) request.resolve({ commits, bytes, cold });
      });
    }
    // nothing new, nothing to pack: a warm run that fetched nothing costs no maintenance
    if (fetched > 0) await this.#maintain();
  }

  async #create(): Promise<void> {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.new-${process.pid}-${Date.now()}`;
    await git(["init", "--quiet", "--bare", temporary]);
    // every fetch keeps what it received as one pack: the bytes a fetch added are the new packs' sizes
    await git(["--git-dir", temporary, "config", "fetch.unpackLimit", "1"]);
    // maintenance of a mirror is svc's (maintain below), under the fetch lock, never a fetch's side effect
    await git(["--git-dir", temporary, "config", "gc.auto", "0"]);
    await git(["--git-dir", temporary, "config", "maintenance.auto", "false"]);
    await rm(this.path, { recursive: true, force: true });
    renameSync(temporary, this.path);
  }

  /** What the round's fetches must bring: the wants the mirror lacks, each by id or by its ref. */
  async #fetch(requests: Request[]): Promise<void> {
    const auth = requests[0]!.auth;
    const refspecs: string[] = [];
    const wants = requests.flatMap((request) => request.wants);
    const held = await commitsHeld(
      this.path,
      wants.flatMap((want) => (want.sha ? [want.sha] : [])),
    );
    for (const want of wants) {
      if (want.sha && held.has(want.sha)) continue;
      refspecs.push(want.sha ? `+${want.sha}:${want.keepRef}` : `+${want.remoteRef}:${want.keepRef}`);
    }
    if (refspecs.length === 0) return;
    await this.#fetchRefspecs(auth, [...new Set(refspecs)]);
  }

  async #fetchRefspecs(auth: GitAuth, refspecs: string[]): Promise<void> {
    await git(["--git-dir", this.path, ...FETCH, "--", auth.url, ...refspecs], { env: auth.env }).catch(
      (error: unknown) => {
        throw refusal(error, auth) ?? error;
      },
    );
  }

  /**
   * The commit of each want once the round's fetch ran. A want the shared fetch did not bring (one
   * id the host refused fails the whole fetch) is fetched alone: by id, then by its ref.
   */
  async #resolveWants(request: Request, roundError: unknown): Promise<string[]> {
    if (roundError instanceof RefusedError) throw roundError;
    const commits: string[] = [];
    const held = await commitsHeld(
      this.path,
      request.wants.flatMap((want) => (want.sha ? [want.sha] : [])),
    );
    // the mirror's refs that keep what the run fetched, moved in one transaction where they must move
    const keep: string[] = [];
    for (const want of request.wants) {
      if (want.sha) {
        let commit = want.sha;
        if (!held.has(want.sha)) {
          try {
            await this.#fetchAlone(want, request.auth);
          } catch (error) {
            if (!want.base || !(error instanceof MissingCommitError)) throw error;
            commit = await this.#baseNow();
          }
        }
        if (commit) keep.push(`update ${want.keepRef} ${commit}`);
        commits.push(commit);
      } else {
        // a branch or the default branch: the ref as the host has it now
        if (roundError) await this.#fetchRefspecs(request.auth, [`+${want.remoteRef}:${want.keepRef}`]);
        commits.push(
          (await git(["--git-dir", this.path, "rev-parse", "--verify", `${want.keepRef}^{commit}`])).trim(),
        );
      }
    }
    if (keep.length > 0)
      await git(["--git-dir", this.path, "update-ref", "--stdin"], { input: `${keep.join("\n")}\n` });
    return commits;
  }

  /** The base branch's commit as the last fallback fetched it, or "" when the host has no such branch. */
  async #baseNow(): Promise<string> {
    try {
      return (
        await git(["--git-dir", this.path, "rev-parse", "--verify", "refs/svc/fallback^{commit}"])
      ).trim();
    } catch {
      return ""; // the fallback found no branch: the run has no base
    } finally {
      // a ref that is not there needs no deleting: either way none is left for the next want
      await git(["--git-dir", this.path, "update-ref", "-d", "refs/svc/fallback"]).catch(() => "");
    }
  }

  async #fetchAlone(want: Want, auth: GitAuth): Promise<void> {
    const tried = ["the commit id"];
    try {
      await this.#fetchRefspecs(auth, [`+${want.sha}:${want.keepRef}`]);
    } catch (error) {
      if (error instanceof RefusedError) throw error;
    }
    if (await hasCommit(this.path, want.sha!)) return;
    if (want.remoteRef) {
      tried.push(want.remoteRef);
      // the last fallback's ref, if any: gone, so #baseNow reads only what this one fetched
      await git(["--git-dir", this.path, "update-ref", "-d", "refs/svc/fallback"]).catch(() => "");
      try {
        await this.#fetchRefspecs(auth, [`+${want.remoteRef}:refs/svc/fallback`]);
      } catch (error) {
        if (error instanceof RefusedError) throw error;
        // the ref is gone (a closed pull request's head): the message below says what was tried
      }
      if (await hasCommit(this.path, want.sha!)) return;
    }
    throw new MissingCommitError(`${auth.url} has no commit ${want.sha} (tried ${tried.join(" and ")})`);
  }

  /** `git fsck --connectivity-only`: every ref's history complete and readable. */
  async isSound(): Promise<boolean> {
    try {
      await git(["--git-dir", this.path, "fsck", "--connectivity-only", "--no-dangling", "--no-progress"]);
      return true;
    } catch (error) {
      if (error instanceof GitError) return false;
      throw error;
    }
  }

  /** A corrupt mirror is moved aside and removed: the next round makes it anew, with a cold fetch. */
  async rebuild(): Promise<void> {
    const aside = `${this.path}.corrupt-${process.pid}-${Date.now()}`;
    if (existsSync(this.path)) renameSync(this.path, aside);
    await rm(aside, { recursive: true, force: true });
  }

  /** Under the fetch lock: pack what fetches left loose or in many small packs, when git thinks it due. */
  async #maintain(): Promise<void> {
    try {
      await git([
        "--git-dir",
        this.path,
        "-c",
        "gc.auto=6700",
        "-c",
        "gc.autoPackLimit=50",
        "gc",
        "--auto",
        "--quiet",
      ]);
    } catch {
      // a failed repack leaves the mirror as it was (git replaces packs only once written): the next round tries again
    }
  }

  /** Runs `work` with the fetch lock held: no fetch of this host changes the mirror meanwhile. */
  async locked<T>(work: () => Promise<T>): Promise<T> {
    const lock = await lockFile(`${this.path}.lock`, "exclusive", { wait: true });
    try {
      return await work();
    } finally {
      await lock?.release();
    }
  }
}

function packSizes(mirror: string): Map<string, number> {
  const sizes = new Map<string, number>();
  const dir = join(mirror, "objects", "pack");
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return sizes; // no pack yet
  }
  for (const name of names)
    if (name.endsWith(".pack")) {
      try {
        sizes.set(name, statSync(join(dir, name)).size);
      } catch {
        // replaced meanwhile: counted by the next look
      }
    }
  return sizes;
}

function newBytes(before: Map<string, number>, after: Map<string, number>): number {
  let bytes = 0;
  for (const [name, size] of after) if (!before.has(name)) bytes += size;
  return bytes;
}

/** A fetch the host refused as the identity: the message says who was refused and what it needs. */
function refusal(error: unknown, auth: GitAuth): RefusedError | undefined {
  if (!(error instanceof GitError)) return undefined;
  const text = error.stderr;
  const status = /returned error: (40[134])/.exec(text)?.[1];
  const refused =
    status !== undefined ||
    /Authentication failed|could not read Username|terminal prompts disabled|Repository not found|repository '.*' not found/i.test(
      text,
    );
  if (!refused) return undefined;
  const how = status
    ? `HTTP ${status}`
    : /not found/i.test(text)
      ? "HTTP 404, repository not found"
      : "HTTP 401";
  return new RefusedError(`${auth.url} refused ${auth.identity} (${how}): it needs ${auth.needs}`);
}
