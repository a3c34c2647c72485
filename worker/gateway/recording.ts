import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Queryable } from "../../db/queryable.ts";
import {
  answerPlanOf,
  type ReplayOutcome,
  recordAnswer,
  recordedAnswersFor,
  recordReplayedCall,
} from "../../db/recorded-answers.ts";
import type { Logger } from "../../shared/logger.ts";
import { redactorFor } from "../run/run-secrets.ts";
import type { Lease } from "./account.ts";
import { AnswerBook } from "./answer-book.ts";
import { errorAnswer } from "./apis.ts";
import { readModelRequest } from "./request.ts";
import { answerJson } from "./upstream.ts";

/**
 * Recorded model answers (docs/evals.md, "Replayed model answers"; docs/worker.md, "The model
 * gateway"). A live run of a pipeline with `record_answers: true` has each model answer its
 * attempts get kept, in call order; a backtest's candidate run started with `replay_answers` is
 * answered from the live run's recording of the same event instead of the model API: its n-th
 * model call gets the n-th recorded answer, whatever its prompt.
 */

/** The most of one answer kept: a larger one is recorded cut, and replayed cut. */
const RECORDED_KEPT = 32 * 1024 * 1024;

/**
 * What the gateway does with an attempt's model calls: replay them (a backtest's candidate run with
 * `replay_answers`), record them (`record` and a live run: not a shadow, outputs not held), or
 * neither (undefined).
 */
export async function openAnswerBook(
  db: Queryable,
  spec: { invocationId: string; taskId: string; record: boolean },
): Promise<AnswerBook | undefined> {
  const plan = await answerPlanOf(db, spec.invocationId);
  if (!plan) return undefined;
  if (plan.replay) {
    const answers = plan.liveInvocation ? await recordedAnswersFor(db, plan.liveInvocation, spec.taskId) : [];
    return new AnswerBook(db, { mode: "replay", ...spec, answers });
  }
  if (spec.record && plan.live) return new AnswerBook(db, { mode: "record", ...spec });
  return undefined;
}

const sha256 = (body: Buffer) => createHash("sha256").update(body).digest("hex");

/** Hop-by-hop and length headers: the replay writes its own (a redacted body may be shorter). */
const NOT_KEPT = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

/**
 * One answer being recorded as it passes: its bytes are kept beside the relay (nothing is held
 * back from the agent) and written when the answer ends, the attempt's end waiting for the write.
 */
export class Tape {
  readonly #lease: Lease;
  readonly #book: AnswerBook;
  readonly #call: number;
  readonly #path: string;
  readonly #requestSha256: string;
  readonly #logger: Logger;
  #status = 0;
  #headers: Record<string, string | string[]> = {};
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  #cut = false;

  constructor(lease: Lease, book: AnswerBook, path: string, body: Buffer, logger: Logger) {
    this.#lease = lease;
    this.#book = book;
    this.#call = book.nextCall();
    this.#path = path;
    this.#requestSha256 = sha256(body);
    this.#logger = logger;
  }

  head(status: number, headers: Record<string, string | string[]>): void {
    this.#status = status;
    this.#headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !NOT_KEPT.has(name)));
  }

  push(chunk: Buffer): void {
    if (this.#bytes + chunk.length > RECORDED_KEPT) {
      this.#cut = true;
      return;
    }
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
  }

  end(complete: boolean): void {
    const book = this.#book;
    // redacted as the run's transcripts are, while the run's secrets are still open on this worker
    const text = Buffer.concat(this.#chunks).toString("utf8");
    const body = Buffer.from(redactorFor(book.invocationId).redact(text), "utf8");
    const write = recordAnswer(book.db, {
      invocationId: book.invocationId,
      taskId: book.taskId,
      call: this.#call,
      api: this.#lease.api,
      path: this.#path,
      target: this.#lease.target.name,
      requestSha256: this.#requestSha256,
      status: this.#status,
      headers: this.#headers,
      body,
      complete: complete && !this.#cut,
    });
    this.#lease.account.track(
      write.catch((error: Error) =>
        this.#logger.warn("gateway: recording a model answer failed", {
          event: "gateway.record_failed",
          invocation: book.invocationId,
          task: book.taskId,
          call: this.#call,
          error: error.message,
        }),
      ),
    );
  }
}

/** The tape of a model call to record, when the lease's attempt records its answers. */
export function tapeOf(lease: Lease, path: string, body: Buffer, logger: Logger): Tape | undefined {
  const book = lease.account.answers;
  return book?.mode === "record" ? new Tape(lease, book, path, body, logger) : undefined;
}

/**
 * Answers a model call of a replaying attempt from the recording, never from the model API: the
 * request is read and checked as one sent upstream would be (request.ts), so its hash is comparable
 * with the recorded one. The same request is `replayed`; another (the prompt differs) still gets
 * the recorded answer and is `diverged`; a call past the recording (or whose recorded call went to
 * another API: Messages, Chat Completions, Responses) is `missing` and answered with an error the
 * agent's runtime takes for the model's failure. Nothing is charged: the attempt's usage and
 * budgets do not count a replayed call.
 */
export function replayAnswer(
  lease: Lease,
  path: string,
  request: IncomingMessage,
  response: ServerResponse,
  logger: Logger,
): void {
  const book = lease.account.answers as AnswerBook;
  void readModelRequest(request, lease.api, path).then((read) => {
    if (!read) return;
    if ("refused" in read) {
      answerJson(response, request, read.refused);
      return;
    }
    const call = book.nextCall();
    const recorded = book.answers[call - 1];
    const noted = (outcome: ReplayOutcome) =>
      lease.account.track(
        recordReplayedCall(book.db, {
          invocationId: book.invocationId,
          taskId: book.taskId,
          call,
          outcome,
        }).catch((error: Error) =>
          logger.warn("gateway: recording a replayed model call failed", {
            event: "gateway.replay_note_failed",
            invocation: book.invocationId,
            error: error.message,
          }),
        ),
      );
    // an answer of another API (Messages, Chat Completions, Responses) is not one this call can read
    if (!recorded || recorded.api !== lease.api || recorded.path !== path) {
      noted("missing");
      const why = recorded
        ? `the live run's call ${call} went to ${recorded.api} ${recorded.path}, this one to ${lease.api} ${path}`
        : `the live run's recording holds ${book.answers.length} answer${book.answers.length === 1 ? "" : "s"} for this agent`;
      logger.info(`gateway: model call ${call} of a replaying run has no recorded answer: ${why}`, {
        event: "gateway.replay_missing",
        invocation: book.invocationId,
        task: book.taskId,
        call,
      });
      answerJson(
        response,
        request,
        errorAnswer(
          lease.api,
          "no_recording",
          `svc's gateway replays recorded model answers for this backtest and has none for model call ${call}: ${why}; the model API is not called`,
        ),
      );
      return;
    }
    noted(recorded.requestSha256 === sha256(read.body) ? "replayed" : "diverged");
    response.writeHead(recorded.status, { ...recorded.headers, "content-length": recorded.body.length });
    if (recorded.complete) response.end(recorded.body);
    // an answer cut when it was recorded is cut again: the agent must not take the part for the whole
    else response.write(recorded.body, () => response.destroy());
  });
}
