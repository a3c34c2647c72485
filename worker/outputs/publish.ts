import { knownAppSlug } from "../../shared/codehost/app-slug.ts";
import { gitlabClient, gitlabHost } from "../../shared/codehost/gitlab.ts";
import type { OutputBinding, Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type {
  ChatMessageResult,
  CommentResult,
  ReplyResult,
  ReviewResult,
} from "../../shared/output-schemas.ts";
import { readReply } from "../event/reply.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import { countDelivery } from "../metrics.ts";
import { PublishError, type PublishFailure } from "./attempt.ts";
import { ChatPublisher } from "./chat.ts";
import { CodehostPublisher, codehostClient, type PullRef, pullRefOf } from "./codehost.ts";
import { type DeliveryOutcome, type DeliveryWork, deliver } from "./delivery.ts";
import { GitlabPublisher } from "./gitlab-publisher.ts";
import { gitlabReviewWork } from "./gitlab-review.ts";
import type { PublishDeps } from "./publish-deps.ts";
import { footerLine, renderMentions, type Stamp, stampBody } from "./render.ts";
import { reviewWork, type Work } from "./review.ts";
import { stampOf } from "./stamp.ts";
import { stickyBody, writeSticky } from "./sticky.ts";
import { codehostIdentity, identityToken, secretValue } from "./tokens.ts";

export type { PublishDeps };

export interface PublishInput {
  invocationId: string;
  triggerId: string | null;
  pipeline: Pipeline;
  result: unknown;
  event: ResolvedEvent;
  /** the run still holds its claim (see delivery.ts, ClaimLostError) */
  stillHeld?: () => Promise<boolean>;
  /** the run's redactor (worker/run/run-secrets.ts): no secret the run was given is published */
  redact: (text: string) => string;
}

/**
 * Publishes each `outputs.<key>` the validated result holds, exactly once (see delivery.ts).
 * Returns null when everything landed, else `output_failed` with one detail per failed key.
 */
export async function publishOutputs(deps: PublishDeps, input: PublishInput): Promise<Diagnostic | null> {
  const result = redactedResult(input);
  const stamp = await stampOf(deps.pool, {
    pipeline: input.pipeline,
    origin: input.triggerId ?? input.invocationId,
    invocation: input.invocationId,
  });
  const failures: Diagnostic[] = [];
  for (const [key, binding] of Object.entries(input.pipeline.outputs)) {
    if (result[key] === undefined || result[key] === null) continue;
    let outcomes: DeliveryOutcome[];
    try {
      outcomes = await publishOne(deps, input, stamp, key, binding, result[key]);
    } catch (error) {
      if (!(error instanceof PublishError)) throw error;
      outcomes = [{ status: "failed", failure: error.failure, attempts: 0 }];
    }
    for (const outcome of outcomes) {
      countDelivery(binding.handler, outcome.status === "sent" && outcome.reused ? "reused" : outcome.status);
      if (outcome.status === "failed") failures.push(failureDetail(key, binding.handler, outcome));
    }
  }
  if (failures.length === 0) return null;
  return diagnostic(
    "output_failed",
    `publishing failed for ${failures.map((detail) => `outputs.${detail.field} (${detail.metadata?.status}: ${detail.metadata?.hostMessage})`).join(", ")}`,
    { details: failures },
  );
}

/**
 * The result with every string in it passed through the run's redactor: an agent that read a
 * secret it was given (a token in its environment, a credential in a file) and wrote it into its
 * answer publishes the redaction mark, never the value (issue 55, finding 6).
 */
export function redactedResult(input: Pick<PublishInput, "result" | "redact">): Record<string, unknown> {
  const redact = (value: unknown): unknown => {
    if (typeof value === "string") return input.redact(value);
    if (Array.isArray(value)) return value.map(redact);
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, redact(inner)]));
  };
  return redact(input.result ?? {}) as Record<string, unknown>;
}

export function failureDetail(
  key: string,
  handler: string,
  outcome: { failure: PublishFailure; attempts: number },
): Diagnostic {
  return diagnostic(
    "output_failed",
    `outputs.${key} (${handler}) was not published: ${outcome.failure.message}`,
    {
      field: key,
      metadata: {
        handler,
        status: outcome.failure.status,
        hostMessage: outcome.failure.message,
        attempts: outcome.attempts,
      },
    },
  );
}

async function publishOne(
  deps: PublishDeps,
  input: PublishInput,
  stamp: Stamp,
  key: string,
  binding: OutputBinding,
  value: unknown,
): Promise<DeliveryOutcome[]> {
  const base = {
    invocationId: input.invocationId,
    handler: binding.handler,
    ...(input.stillHeld ? { stillHeld: input.stillHeld } : {}),
  };
  const run = (work: Work) => deliver(deps.pool, deps.logger, { ...base, ...work });
  if (binding.handler === "chat.message") {
    return [await run(await chatWork(deps, binding, stamp, key, value as ChatMessageResult))];
  }
  // the triggering repository's identity; a result naming another repository of the same
  // installation is reached by it too, one of another installation is refused by GitHub
  const codehost = await codehostPublisher(deps, input.pipeline, input.event.context.repo);
  switch (binding.handler) {
    case "codehost.comment": {
      const comment = value as CommentResult;
      const ref = commentTarget(input.event, binding, key, comment);
      if (binding.sticky) {
        const write = {
          pipeline: stamp.pipeline,
          ref,
          key,
          invocation: stamp.invocation,
          seal: stamp.seal,
          sha: input.event.context.sha || null,
        };
        const body = stickyBody(comment.body, stamp, key);
        // every retry goes through writeSticky, which edits rather than posts again
        return [
          await run({
            key,
            find: async () => undefined,
            post: () => writeSticky(deps.pool, codehost, write, body, "result"),
          }),
        ];
      }
      return [
        await run({
          key,
          find: () => codehost.findComment(ref, stamp, key),
          post: () => codehost.postComment(ref, stampBody(comment.body, stamp, key)),
        }),
      ];
    }
    case "codehost.review": {
      const ref = pullRef(input.event);
      if (codehost instanceof GitlabPublisher) {
        const works = await gitlabReviewWork(
          deps,
          codehost,
          { event: input.event, ref, stamp, key, binding },
          value as ReviewResult,
        );
        // in order: the findings, the approval, then the summary that names what GitLab refused
        const outcomes: DeliveryOutcome[] = [];
        for (const work of works) outcomes.push(await run(work));
        return outcomes;
      }
      const work = await reviewWork(
        deps,
        codehost,
        { event: input.event, ref, stamp, key, binding },
        value as ReviewResult,
      );
      const outcomes: DeliveryOutcome[] = [];
      if (work.summary) outcomes.push(await run(work.summary));
      // a summary that could not be written fails the output, but the findings still land
      const summary = outcomes[0];
      const review = work.review(summary?.status === "sent" ? summary.remote.url : null);
      if (review) outcomes.push(await run(review));
      return outcomes;
    }
    case "codehost.review-comment-reply":
      return [await run(replyWork(codehost, input.event, stamp, key, value as ReplyResult))];
    case "codehost.review-replies": {
      const outcomes: DeliveryOutcome[] = [];
      const { replies } = value as { replies: ReplyResult[] };
      for (const [index, reply] of replies.entries())
        outcomes.push(await run(replyWork(codehost, input.event, stamp, `${key}[${index}]`, reply)));
      return outcomes;
    }
    default:
      throw new PublishError({
        kind: "final",
        status: "unknown_handler",
        message: `no handler ${binding.handler}`,
      });
  }
}

/**
 * The publisher acting on `repo`: GitHub's (an App identity's token belongs to that repository's
 * installation), or GitLab's with `codehost.kind: gitlab`.
 */
export async function codehostPublisher(
  deps: PublishDeps,
  pipeline: Pipeline,
  repo: string,
): Promise<CodehostPublisher | GitlabPublisher> {
  const identity = codehostIdentity(deps.config, pipeline);
  if (!identity || !deps.config.codehost) {
    throw new PublishError({
      kind: "final",
      status: "no_identity",
      message:
        "no code-host identity to post as - configure codehost.app, codehost.token or a codehost principal",
    });
  }
  const token = await identityToken(identity.credential, repo, deps.pool, deps.config);
  const { apiUrl } = deps.config.codehost;
  if (deps.config.codehost.kind === "gitlab")
    return new GitlabPublisher(gitlabClient({ apiUrl, token }), token, gitlabHost(apiUrl));
  const app = identity.credential.app;
  return new CodehostPublisher(
    codehostClient({ apiUrl: deps.config.codehost.apiUrl, token, logger: deps.logger }),
    token,
    app ? { app: app.id, slug: () => knownAppSlug(app.id) } : { token: true },
  );
}

/**
 * Where a `codehost.comment` goes. The result's `repo` and `number` are the model's words: a
 * prompt-injected agent would name another pull request (and edit svc's sticky comment there, or
 * comment anywhere the identity can) with a verdict of its choosing. So the event's own issue or
 * pull request is the only target, and a result naming another is refused, naming the field;
 * `outputs.<key>.target: any` opens it for pipelines whose job is to post elsewhere, never for a
 * run an outsider's event started.
 */
export function commentTarget(
  event: ResolvedEvent,
  binding: OutputBinding,
  key: string,
  comment: Pick<CommentResult, "repo" | "number">,
): PullRef {
  const named = comment.repo !== undefined || comment.number !== undefined;
  if (binding.target === "any" && !event.context.outsider)
    return pullRef(event, comment.repo, comment.number);
  const own = ownRef(event);
  if (!named) return pullRef(event);
  const sameRepo =
    comment.repo === undefined || comment.repo.toLowerCase() === event.context.repo.toLowerCase();
  const sameNumber = comment.number === undefined || comment.number === own?.number;
  if (own && sameRepo && sameNumber) return own;
  const field = !sameRepo ? "repo" : "number";
  const asked = `${comment.repo ?? event.context.repo}#${comment.number ?? own?.number ?? "?"}`;
  const why =
    binding.target === "any"
      ? "an outsider's run posts only on its own pull request or issue"
      : `outputs.${key} posts only on the event's own pull request or issue (set outputs.${key}.target: any in the pipeline to let the result choose)`;
  throw new PublishError({
    kind: "final",
    status: "target_refused",
    message: `outputs.${key}.${field} names ${asked}, not ${own ? `${own.owner}/${own.repo}#${own.number}` : "the event's (it is about no issue or pull request)"}: ${why}`,
  });
}

/** The event's own issue or pull request, or undefined when it is about none. */
function ownRef(event: ResolvedEvent): PullRef | undefined {
  try {
    return pullRef(event);
  } catch (error) {
    // an event about no issue or pull request has no own target: the caller refuses what was named
    if (error instanceof PublishError) return undefined;
    throw error;
  }
}

/** The issue or pull request a result addresses: its own `repo`/`number`, else the triggering one. */
export function pullRef(event: ResolvedEvent, repo?: string, number?: number): PullRef {
  const payload = (event.payload ?? {}) as Record<string, { number?: unknown } | unknown>;
  const fromEvent = [payload.pull_request, payload.issue]
    .map((entry) => (entry && typeof entry === "object" ? (entry as { number?: unknown }).number : undefined))
    .find((entry) => typeof entry === "number");
  // a GitLab merge request's iid, read by the event model (its payloads have no pull_request)
  const stated = event.context.gitlab && event.context.pull ? event.context.number : fromEvent;
  const target = number ?? (typeof stated === "number" ? stated : undefined);
  const ref = pullRefOf(repo ?? event.context.repo, target ?? 0);
  if (!ref.owner || !ref.repo || target === undefined) {
    throw new PublishError({
      kind: "final",
      status: "no_target",
      message: `the result names no repo/number and the ${event.kind} event ${event.eventName} is not about an issue or pull request`,
    });
  }
  return ref;
}

/**
 * A reply to a review comment. When the event is itself a reply in a review thread, the answer goes
 * to that thread's first comment (GitHub takes replies to a thread's first comment only) whatever
 * `in_reply_to` the result names: the model does not choose where svc writes.
 */
/**
 * The comment a reply answers: on a reply event, the thread the event is about, whatever the result
 * names (a model does not choose where svc writes); otherwise the result's `in_reply_to`.
 */
export function replyTarget(event: ResolvedEvent, reply: ReplyResult): number {
  return readReply(event.eventName, event.payload)?.inReplyTo ?? reply.in_reply_to;
}

function replyWork(
  codehost: CodehostPublisher | GitlabPublisher,
  event: ResolvedEvent,
  stamp: Stamp,
  key: string,
  reply: ReplyResult,
): Omit<DeliveryWork, "invocationId" | "handler"> {
  const ref = pullRef(event);
  const inReplyTo = replyTarget(event, reply);
  return {
    key,
    find: () => codehost.findReply(ref, stamp, key),
    post: () => codehost.postReply(ref, inReplyTo, stampBody(reply.body, stamp, key)),
  };
}

async function chatWork(
  deps: PublishDeps,
  binding: OutputBinding,
  stamp: Stamp,
  key: string,
  message: ChatMessageResult,
): Promise<Omit<DeliveryWork, "invocationId" | "handler">> {
  const target = binding.config!;
  const bot = deps.config.channels.chat.bots[target.bot];
  if (!bot) {
    throw new PublishError({
      kind: "final",
      status: "unknown_bot",
      message: `chat bot ${target.bot} is not configured`,
    });
  }
  const chat = new ChatPublisher({
    apiUrl: deps.config.channels.chat.apiUrl ?? "https://slack.com/api/",
    token: await secretValue(bot.token, deps.pool, deps.config),
  });
  const members = deps.config.members;
  const footer = footerLine(stamp);
  const blocks = message.blocks
    ? [
        ...(mentionsInBlocks(message.blocks, (text) => renderMentions(text, members)) as Record<
          string,
          unknown
        >[]),
        { type: "context", elements: [{ type: "mrkdwn", text: footer }] },
      ]
    : undefined;
  const marker = { invocation: stamp.invocation, key };
  return {
    key,
    find: () => chat.find(target.channel, marker, message.thread_ts),
    post: () =>
      chat.post({
        channel: target.channel,
        text: `${renderMentions(message.text, members)}\n_${footer}_`,
        ...(blocks ? { blocks } : {}),
        ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
        marker,
      }),
  };
}

/** Renders mentions in every `text` string of a Block Kit tree. */
function mentionsInBlocks(value: unknown, render: (text: string) => string): unknown {
  if (Array.isArray(value)) return value.map((entry) => mentionsInBlocks(entry, render));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [
      name,
      name === "text" && typeof inner === "string" ? render(inner) : mentionsInBlocks(inner, render),
    ]),
  );
}
