import type pg from "pg";
import {
  forgetSticky,
  getSticky,
  type StickyKey,
  type StickyState,
  saveSticky,
} from "../../db/sticky-comments.ts";
import type { Diagnostic } from "../../shared/diagnostics.ts";
import { PublishError } from "./attempt.ts";
import type { PullRef } from "./codehost.ts";
import type { Remote } from "./delivery.ts";
import { type Sealed, type Stamp, stampBody } from "./render.ts";

/**
 * One comment per pipeline, pull request and output key, edited by every run (docs/outputs.md,
 * "Sticky comments"). The comment is found by the id svc recorded when it posted it, never by its
 * text: anyone who can comment on the pull request can write svc's markers into a comment of their
 * own. The markers only let a run find its own post whose answer was lost.
 */
export interface StickyWrite {
  pipeline: string;
  ref: PullRef;
  key: string;
  invocation: string;
  /** the invocation's seal (render.ts marker): a lost post is recognised by it */
  seal: string;
  /** the commit the run is about; named in the progress and end lines */
  sha: string | null;
}

/** What a sticky comment needs of a code host: GitHub's issue comments, GitLab's merge request notes. */
export interface CommentHost {
  postComment(ref: PullRef, body: string): Promise<Remote>;
  updateComment(ref: PullRef, id: string, body: string): Promise<Remote>;
  findComment(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined>;
}

export function stickyMarker(pipeline: string, key: string): string {
  return `<!-- svc:sticky:${pipeline}:${key} -->`;
}

/** A sticky comment's body: the text, the usual footer and marker, and the sticky marker. */
export function stickyBody(text: string, stamp: Stamp, key: string): string {
  return `${stampBody(text, stamp, key)}\n${stickyMarker(stamp.pipeline, key)}`;
}

export function stickyKey(write: Pick<StickyWrite, "pipeline" | "ref" | "key">): StickyKey {
  return {
    pipeline: write.pipeline,
    repo: `${write.ref.owner}/${write.ref.repo}`,
    number: write.ref.number,
    key: write.key,
  };
}

/**
 * Writes `body` into the sticky comment: an edit of the recorded comment, else an edit of this
 * run's own post whose answer was lost (found by its marker), else a new comment. Every retry of
 * a lost answer comes back here, so it is an edit again, never a second comment.
 */
export async function writeSticky(
  pool: pg.Pool,
  codehost: CommentHost,
  write: StickyWrite,
  body: string,
  state: StickyState,
): Promise<Remote> {
  const key = stickyKey(write);
  const record = (remote: Remote) =>
    saveSticky(pool, key, remote, { invocationId: write.invocation, state, sha: write.sha });
  const row = await getSticky(pool, key);
  if (row) {
    try {
      const remote = await codehost.updateComment(write.ref, row.comment_id, body);
      await record(remote);
      return remote;
    } catch (error) {
      // deleted on the code host (by a maintainer): the next comment is a new one
      if (!(error instanceof PublishError && error.failure.status === "404")) throw error;
      await forgetSticky(pool, key);
    }
  }
  const lost = await codehost.findComment(write.ref, write, write.key);
  const remote = lost
    ? await codehost.updateComment(write.ref, lost.id, body)
    : await codehost.postComment(write.ref, body);
  await record(remote);
  return remote;
}

const SHA = /^[0-9a-f]{7,64}$/i;

function commitWords(sha: string | null): string {
  return sha && SHA.test(sha) ? ` on commit ${sha}` : "";
}

function traceLink(publicUrl: string | undefined, invocation: string): string {
  return publicUrl ? ` · [trace](${publicUrl}/ui/trace/${invocation})` : "";
}

/** The line a sticky comment holds while its run is going. */
export function progressText(
  pipeline: string,
  sha: string | null,
  invocation: string,
  publicUrl: string | undefined,
): string {
  return `⏳ **${pipeline}** is running${commitWords(sha)}${traceLink(publicUrl, invocation)}`;
}

/**
 * Text that came from a run (a diagnostic's message may quote a host's answer or a path of the
 * model's result) shown inert: one line, in a code span longer than any backtick run in it, so
 * it can neither mention anyone, link, nor close the span; markers cannot survive either.
 */
export function inert(text: string, max = 300): string {
  let line = text
    .replace(/\s+/g, " ")
    .replace(/\p{Cc}+/gu, "")
    .replace(/<!--/g, "<!- -")
    .trim();
  if (line.length > max) line = `${line.slice(0, max - 1)}…`;
  const longest = Math.max(0, ...(line.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const pad = line.startsWith("`") || line.endsWith("`") ? " " : "";
  return `${fence}${pad}${line}${pad}${fence}`;
}

/** The one line a run that published nothing leaves: how it ended and why. */
export function endText(
  pipeline: string,
  sha: string | null,
  invocation: string,
  publicUrl: string | undefined,
  ended: { status: string; diagnostic: Diagnostic | null },
): string {
  const what =
    ended.status === "cancelled"
      ? `⏹ **${pipeline}** was cancelled${commitWords(sha)}`
      : ended.status === "failed"
        ? `❌ **${pipeline}** failed${commitWords(sha)}`
        : `✅ **${pipeline}** finished${commitWords(sha)} with nothing to report`;
  const why = ended.diagnostic
    ? `: ${inert(ended.diagnostic.code, 64)} ${inert(ended.diagnostic.message)}`
    : "";
  return `${what}${why}${traceLink(publicUrl, invocation)}`;
}

/**
 * The line a review that was not started leaves: the pull request changes more lines than
 * `review.max_changed_lines`, and how to ask anyway (`ask`: the comment that does, when the
 * pipeline takes a comment command; else where the limit is set).
 */
export function tooLargeText(
  pipeline: string,
  sha: string | null,
  invocation: string,
  publicUrl: string | undefined,
  large: { lines: number; max: number; ask?: string; file: string },
): string {
  const how = large.ask
    ? `comment \`${large.ask}\` to review it anyway`
    : `raise review.max_changed_lines in ${large.file} to review pull requests this large`;
  return `⏸ **${pipeline}** did not review${commitWords(sha)}: the pull request changes ${large.lines} lines, more than review.max_changed_lines (${large.max}). ${how[0]!.toUpperCase()}${how.slice(1)}.${traceLink(publicUrl, invocation)}`;
}
