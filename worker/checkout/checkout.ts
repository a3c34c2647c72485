import { existsSync, mkdirSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { cacheRoot } from "../../shared/repo-cache.ts";
import type { EventContext } from "../event/context.ts";
import { observeCheckout, setRepoCacheBytes } from "../metrics.ts";
import { boundCache, mirrorPath, useMirror } from "./cache.ts";
import { CheckoutAuthError, checkoutAuth, type GitAuth } from "./credentials.ts";
import { COMMIT_ID, GitError } from "./git.ts";
import { type BaseInstructions, readBaseInstructions } from "./instructions.ts";
import { Mirror, MissingCommitError, RefusedError, type Want } from "./mirror.ts";
import { type ReviewFacts, readReviewFacts, reviewsPulls } from "./review-rules.ts";
import { type Plan, planWorktree, writeWorktree } from "./worktree.ts";

/** A checkout that cannot be made: its message ends the run as `setup_failed`. */
export class CheckoutError extends Error {}

export interface CheckoutResult {
  head: string;
  base?: { sha: string; ref: string };
  mergeBase?: string;
  /** the concurrency group's last reviewed head, when it is an ancestor of this head */
  previous?: string;
  /**
   * bytes the run's fetch added to the mirror, as packs on disk (shared with the runs it was fetched
   * for): what the host sent, completed with the base objects a thin pack leaves out, so a small
   * fetch reads a few KB more than crossed the network
   */
  bytes: number;
  /** the mirror was made for this run */
  cold: boolean;
  /** the credential the fetch used: the run's redaction must know it */
  secret?: string;
  /** an outsider's pull request: the instruction files the agent gets instead of the head's (instructions.ts) */
  instructions?: BaseInstructions;
  /** a review of a pull request: what it changes and the base commit's review rules (review-rules.ts) */
  review?: ReviewFacts;
  seconds: number;
}

/** One Mirror per mirror folder in this process: what coalesces the fetches of runs at once. */
const mirrors = new Map<string, Mirror>();

/**
 * A branch or ref name an event names, accepted only in a form git reads as nothing but a name: no
 * option, no revision syntax (`..`, `@{`, `^`, `~`, `:`), no path escape, no control character.
 */
export function safeRefName(name: string): boolean {
  return (
    /^[A-Za-z0-9][A-Za-z0-9._/+-]*$/.test(name) &&
    !/\.\.|\/\/|\/\.|@\{|\.lock(\/|$)|[/.]$/.test(name) &&
    name.length <= 255
  );
}

/** What the event asks for, as the mirror's wants: the head first, then a pull request's base. */
export function wantsOf(context: EventContext): { wants: Want[]; base?: { sha: string; ref: string } } {
  const { sha, branch, number } = context;
  if (sha && !COMMIT_ID.test(sha)) throw new CheckoutError(`${JSON.stringify(sha)} is not a full commit id`);
  if (branch && !safeRefName(branch))
    throw new CheckoutError(`${JSON.stringify(branch)} is not a branch name svc checks out`);
  const wants: Want[] = [];
  if (context.pull && number !== undefined) {
    // GitLab keeps a merge request's head (a fork's too) at refs/merge-requests/<iid>/head
    const ref = context.gitlab ? `refs/merge-requests/${number}/head` : `refs/pull/${number}/head`;
    wants.push(sha ? { sha, remoteRef: ref, keepRef: ref } : { remoteRef: ref, keepRef: ref });
  } else if (sha) {
    wants.push(
      branch
        ? { sha, remoteRef: `refs/heads/${branch}`, keepRef: `refs/heads/${branch}` }
        : { sha, keepRef: "refs/svc/commit" },
    );
  } else if (branch) {
    wants.push({ remoteRef: `refs/heads/${branch}`, keepRef: `refs/heads/${branch}` });
  } else {
    wants.push({ remoteRef: "HEAD", keepRef: "refs/svc/default" });
  }
  let base: { sha: string; ref: string } | undefined;
  const stated = context.base;
  if (stated && COMMIT_ID.test(stated.sha) && safeRefName(stated.ref)) {
    base = stated;
    const ref = `refs/heads/${stated.ref}`;
    wants.push({ sha: stated.sha, remoteRef: ref, keepRef: ref, base: true });
  }
  return { wants, ...(base ? { base } : {}) };
}

export interface CheckoutRequest {
  repo: string;
  cloneUrl: string;
  context: EventContext;
  pipeline: Pipeline;
  /** the run's (or task's) checkout folder; made here, by a rename once complete */
  dest: string;
  /** the concurrency group's last reviewed head, a candidate for PREVIOUS_SHA */
  previous?: string;
}

/**
 * The event's exact commit in the run's folder, from the host's mirror of the repository, fetched
 * as the run's code-host identity when the mirror lacks it (docs/worker.md, "Checkouts"). A retried
 * run keeps the checkout its first attempt made. A mirror that fails while a worktree is written
 * from it is checked (`git fsck --connectivity-only`) and, when unsound, made anew once.
 */
export async function checkOutRepository(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot> },
  request: CheckoutRequest,
): Promise<CheckoutResult> {
  const started = performance.now();
  let auth: GitAuth;
  try {
    auth = await checkoutAuth(deps, request.pipeline, request.repo, request.cloneUrl);
  } catch (error) {
    if (error instanceof CheckoutAuthError) throw new CheckoutError(error.message);
    throw error;
  }
  const { wants, base } = wantsOf(request.context);
  const root = cacheRoot(deps.config.dir);
  const path = mirrorPath(root, request.repo, auth.url);
  let mirror = mirrors.get(path);
  if (!mirror) {
    mirror = new Mirror(path);
    mirrors.set(path, mirror);
  }
  const release = await useMirror(path);
  let result: CheckoutResult;
  try {
    result = await fromMirror(mirror, request, auth, wants, base).catch(async (error: unknown) => {
      // a refusal is the identity's; anything else may be a mirror whose objects went bad on disk
      // (a commit it holds reads as missing): checked, and if unsound rebuilt (a cold fetch) and tried once more
      if (error instanceof RefusedError || error instanceof CheckoutError || (await mirror.isSound()))
        throw error;
      await mirror.locked(() => mirror.rebuild());
      return fromMirror(mirror, request, auth, wants, base);
    });
  } catch (error) {
    if (error instanceof MissingCommitError || error instanceof RefusedError)
      throw new CheckoutError(error.message);
    if (error instanceof GitError) throw new CheckoutError(error.message);
    throw error;
  } finally {
    await release();
  }
  result.seconds = (performance.now() - started) / 1000;
  if (auth.secret) result.secret = auth.secret;
  observeCheckout(result.cold ? "cold" : "warm", result.seconds, result.bytes);
  if (result.bytes > 0 || result.cold) {
    const bound = await boundCache(root, deps.config.workspaces.repoCache.maxSizeBytes, path);
    setRepoCacheBytes(bound.bytes);
  }
  return result;
}

async function fromMirror(
  mirror: Mirror,
  request: CheckoutRequest,
  auth: GitAuth,
  wants: Want[],
  stated: { sha: string; ref: string } | undefined,
): Promise<CheckoutResult> {
  const fetched = await mirror.ensure(wants, auth);
  const head = fetched.commits[0]!;
  // the base the host has: the stated commit, else its branch's commit now, else none
  const base = stated && fetched.commits[1] ? { sha: fetched.commits[1], ref: stated.ref } : undefined;
  const plan: Plan = await planWorktree(
    mirror.path,
    { head, ...(base ? { base } : {}), ...(request.previous ? { previous: request.previous } : {}) },
    request.pipeline.checkout,
  );
  // a retried run keeps what its first attempt checked out (its steps may have built in it)
  if (!existsSync(join(request.dest, ".git"))) {
    const temporary = `${request.dest}.partial-${process.pid}-${Date.now()}`;
    mkdirSync(temporary, { mode: 0o700 });
    try {
      // a sandboxed run's folders go to its container's user: a copy; a run on the host: links
      await writeWorktree(
        mirror.path,
        temporary,
        plan,
        request.pipeline.checkout,
        auth,
        !request.pipeline.sandbox,
      );
      await rm(request.dest, { recursive: true, force: true });
      await rename(temporary, request.dest);
    } catch (error) {
      await rm(temporary, { recursive: true, force: true });
      throw error;
    }
  }
  // an outsider's pull request: its head is theirs. Read here, where the mirror is held in use: the
  // worktree's own objects are the run's to change
  const instructions =
    request.context.outsider && request.context.pull
      ? {
          ...(plan.base ? { base: plan.base } : {}),
          files: plan.base ? await readBaseInstructions(mirror.path, plan.base.sha) : [],
        }
      : undefined;
  // read while the mirror is held in use too, and from it alone: the head's rules are the author's
  const review =
    request.context.pull && reviewsPulls(request.pipeline)
      ? await readReviewFacts(mirror.path, head, plan.base, plan.mergeBase)
      : undefined;
  return {
    head,
    ...(instructions ? { instructions } : {}),
    ...(review ? { review } : {}),
    ...(plan.base ? { base: plan.base } : {}),
    ...(plan.mergeBase ? { mergeBase: plan.mergeBase } : {}),
    ...(plan.previous ? { previous: plan.previous } : {}),
    bytes: fetched.bytes,
    cold: fetched.cold,
    seconds: 0,
  };
}
