import { upsertArtifact } from "../../db/artifacts.ts";
import type { OutputBinding } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { newId } from "../../shared/ids.ts";
import type {
  ChatMessageResult,
  CommentResult,
  ReplyResult,
  ReviewResult,
} from "../../shared/output-schemas.ts";
import { PublishError } from "./attempt.ts";
import { CodehostPublisher } from "./codehost.ts";
import { recordReviewFindings } from "./finding-fates.ts";
import { planGitlabReview } from "./gitlab-review.ts";
import {
  codehostPublisher,
  commentTarget,
  failureDetail,
  type PublishInput,
  pullRef,
  redactedResult,
  replyTarget,
} from "./publish.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { footerLine, renderMentions, type Stamp, stampBody } from "./render.ts";
import { planReview } from "./review.ts";
import { stampOf } from "./stamp.ts";
import { stickyBody } from "./sticky.ts";

/** One output a held run would have published, as it would have gone out. */
export interface HeldOutput {
  key: string;
  handler: string;
  /** `owner/repo#number`, or the chat channel */
  to: string;
  sticky?: boolean;
  /** a review's verdict */
  event?: ReviewResult["event"];
  body: string;
  /** a review's inline findings that would land in the diff (those outside it are in `body`) */
  comments?: { path: string; line: number; start_line?: number; side?: string; body: string }[];
  inReplyTo?: number;
}

/** The artifacts a held run leaves: the outputs as data, and as text for a person. */
export const HELD_JSON = "held/outputs.json";
export const HELD_TEXT = "held/outputs.md";

/**
 * The publishing of a run whose outputs are held back (`svc doctor --deep --fire`): each output is
 * rendered exactly as publishOutputs would send it (the same target, stamp and sticky bodies; a
 * GitHub review placed against the pull request's diff and its standing findings, read from the
 * host) and recorded as the invocation's artifacts, redacted like every artifact. Nothing is
 * written to the code host or the chat, and no delivery or sticky row is written either, so a held
 * run leaves the live runs' state as it found it. A GitLab review is placed the same way against the
 * merge request's diff and svc's discussions (gitlab-review.ts), its findings one discussion each
 * when published. Answers like publishOutputs: `output_failed` when an output could not even be
 * rendered (no target, the host refused a read).
 */
export async function holdOutputs(deps: PublishDeps, input: PublishInput): Promise<Diagnostic | null> {
  const result = redactedResult(input);
  const stamp = await stampOf(deps.pool, {
    pipeline: input.pipeline,
    origin: input.triggerId ?? input.invocationId,
    invocation: input.invocationId,
  });
  const held: HeldOutput[] = [];
  const failures: Diagnostic[] = [];
  for (const [key, binding] of Object.entries(input.pipeline.outputs)) {
    if (result[key] === undefined || result[key] === null) continue;
    try {
      held.push(await renderOne(deps, input, stamp, key, binding, result[key]));
    } catch (error) {
      if (!(error instanceof PublishError)) throw error;
      failures.push(failureDetail(key, binding.handler, { failure: error.failure, attempts: 0 }));
    }
  }
  await recordHeld(deps, input, held);
  deps.logger.info("outputs held back: recorded, not published", {
    event: "output.held",
    invocation: input.invocationId,
    keys: held.map((entry) => entry.key),
  });
  if (failures.length === 0) return null;
  return diagnostic(
    "output_failed",
    `held outputs could not be rendered: ${failures.map((detail) => `outputs.${detail.field}`).join(", ")}`,
    { details: failures },
  );
}

async function renderOne(
  deps: PublishDeps,
  input: PublishInput,
  stamp: Stamp,
  key: string,
  binding: OutputBinding,
  value: unknown,
): Promise<HeldOutput> {
  const { handler } = binding;
  if (handler === "chat.message") {
    const message = value as ChatMessageResult;
    const channel = binding.config?.channel ?? "";
    const text = `${renderMentions(message.text, deps.config.members)}\n_${footerLine(stamp)}_`;
    return { key, handler, to: channel, body: text };
  }
  const at = (ref: { owner: string; repo: string; number: number }) =>
    `${ref.owner}/${ref.repo}#${ref.number}`;
  switch (handler) {
    case "codehost.comment": {
      const comment = value as CommentResult;
      const ref = commentTarget(input.event, binding, key, comment);
      const body = binding.sticky
        ? stickyBody(comment.body, stamp, key)
        : stampBody(comment.body, stamp, key);
      return { key, handler, to: at(ref), sticky: binding.sticky === true, body };
    }
    case "codehost.review": {
      const review = value as ReviewResult;
      const ref = pullRef(input.event);
      const codehost = await codehostPublisher(deps, input.pipeline, input.event.context.repo);
      const plan =
        codehost instanceof CodehostPublisher
          ? await planReview(deps, codehost, ref, binding, review)
          : await planGitlabReview(deps, codehost, ref, binding, review);
      const body = binding.sticky ? stickyBody(plan.text, stamp, key) : stampBody(plan.text, stamp, key);
      // a shadow run's would-be findings, judged later by the live findings on the same lines
      await recordReviewFindings(
        deps,
        { invocationId: input.invocationId, ref, key, reviewId: null },
        plan.fresh,
      );
      return {
        key,
        handler,
        to: at(ref),
        sticky: binding.sticky === true,
        event: review.event,
        body,
        comments: plan.fresh.map((comment) => ({ ...comment })),
      };
    }
    case "codehost.review-comment-reply": {
      const reply = value as ReplyResult;
      const to = at(pullRef(input.event));
      const inReplyTo = replyTarget(input.event, reply);
      return { key, handler, to, inReplyTo, body: stampBody(reply.body, stamp, key) };
    }
    case "codehost.review-replies": {
      const { replies } = value as { replies: ReplyResult[] };
      const to = at(pullRef(input.event));
      const body = replies
        .map(
          (reply) => `in reply to ${replyTarget(input.event, reply)}:\n${stampBody(reply.body, stamp, key)}`,
        )
        .join("\n\n");
      return { key, handler, to, body };
    }
    default:
      throw new PublishError({ kind: "final", status: "unknown_handler", message: `no handler ${handler}` });
  }
}

async function recordHeld(deps: PublishDeps, input: PublishInput, held: HeldOutput[]): Promise<void> {
  const texts: [string, string, string][] = [
    [HELD_JSON, "application/json", JSON.stringify(held, null, 2)],
    [HELD_TEXT, "text/markdown", heldText(held)],
  ];
  for (const [name, mediaType, text] of texts) {
    const rendered = input.redact(text);
    await upsertArtifact(deps.pool, {
      id: newId("artifact"),
      invocationId: input.invocationId,
      taskId: null,
      name,
      mediaType,
      size: Buffer.byteLength(rendered),
      path: null,
      rendered,
    });
  }
}

/** What a person reads: each output, where it would go, then its body and inline findings. */
export function heldText(held: readonly HeldOutput[]): string {
  if (held.length === 0) return "The run produced no output to publish.\n";
  return held
    .map((entry) => {
      const how = [entry.handler, entry.sticky ? "sticky" : "", entry.event ?? ""].filter(Boolean).join(", ");
      const head = `## outputs.${entry.key} → ${entry.to} (${how})`;
      const reply = entry.inReplyTo !== undefined ? `\nin reply to comment ${entry.inReplyTo}` : "";
      const findings = (entry.comments ?? []).map((comment) => {
        const where = comment.start_line ? `${comment.start_line}-${comment.line}` : `${comment.line}`;
        return `- ${comment.path}:${where}: ${comment.body.split("\n")[0]}`;
      });
      const inline = findings.length
        ? `\n\nInline findings (${findings.length}):\n${findings.join("\n")}`
        : "";
      return `${head}${reply}\n\n${entry.body}${inline}\n`;
    })
    .join("\n");
}
