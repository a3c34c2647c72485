import type pg from "pg";
import { countAttempt, markSent, noteError, openDelivery } from "../../db/output-deliveries.ts";
import type { Logger } from "../../shared/logger.ts";
import { PublishError, type PublishFailure } from "./attempt.ts";

export interface Remote {
  id: string;
  url: string | null;
}

/** One output to publish: `find` looks for its marker on the target, `post` creates it. */
export interface DeliveryWork {
  invocationId: string;
  key: string;
  handler: string;
  find: () => Promise<Remote | undefined>;
  post: () => Promise<Remote>;
  /** false once the run lost its claim (its lease failed): nothing may be posted any more */
  stillHeld?: () => Promise<boolean>;
}

/**
 * The run lost its claim while publishing (a partition outlived its lease, and another attempt
 * holds the run now): that attempt publishes, this one posts nothing more.
 */
export class ClaimLostError extends Error {}

export type DeliveryOutcome =
  | { status: "sent"; remote: Remote; reused: boolean }
  | { status: "failed"; failure: PublishFailure; attempts: number };

export const MAX_ATTEMPTS = 3;
const BACKOFF_MS = 1_000;
const MAX_WAIT_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Publishes one output exactly once. The row says what happened before: `sent` is never sent
 * again (a repeated run of the same invocation), and any earlier attempt — an answer lost after
 * the host created the object, or a worker killed between posting and recording — makes the next
 * attempt look for the marker first and adopt what it finds instead of posting a second time.
 */
export async function deliver(db: pg.Pool, logger: Logger, work: DeliveryWork): Promise<DeliveryOutcome> {
  const { invocationId, key } = work;
  const row = await openDelivery(db, { invocationId, key, handler: work.handler });
  if (row.status === "sent") {
    return { status: "sent", remote: { id: row.remote_id ?? "", url: row.remote_url }, reused: true };
  }
  let attempts = row.attempts;
  let last: PublishFailure | undefined;
  for (let round = 0; round < MAX_ATTEMPTS; round += 1) {
    try {
      if (attempts > 0) {
        const found = await work.find();
        if (found) {
          await markSent(db, invocationId, key, found);
          logger.info("output found on the target: not posted again", {
            event: "output.adopted",
            invocation: invocationId,
            key,
            handler: work.handler,
            url: found.url,
          });
          return { status: "sent", remote: found, reused: true };
        }
      }
      // checked before every post, retries included: a post retried across a partition would
      // otherwise race the attempt that took the run over (the marker lookup cannot see a post
      // that both make at once)
      if (work.stillHeld && !(await work.stillHeld())) throw new ClaimLostError(invocationId);
      attempts = await countAttempt(db, invocationId, key);
      const remote = await work.post();
      await markSent(db, invocationId, key, remote);
      logger.info("output published", {
        event: "output.sent",
        invocation: invocationId,
        key,
        handler: work.handler,
        url: remote.url,
        attempts,
      });
      return { status: "sent", remote, reused: false };
    } catch (error) {
      if (!(error instanceof PublishError)) throw error;
      last = error.failure;
      const final = last.kind === "final" || round === MAX_ATTEMPTS - 1;
      await noteError(db, invocationId, key, `${last.status}: ${last.message}`, final ? "failed" : "pending");
      logger.warn(final ? "output failed" : "output attempt failed: retrying", {
        event: final ? "output.failed" : "output.retrying",
        invocation: invocationId,
        key,
        handler: work.handler,
        status: last.status,
        message: last.message,
      });
      if (final) break;
      await sleep(
        Math.min(
          MAX_WAIT_MS,
          last.retryAfter !== undefined ? last.retryAfter * 1000 : BACKOFF_MS * (round + 1),
        ),
      );
    }
  }
  return { status: "failed", failure: last!, attempts };
}
