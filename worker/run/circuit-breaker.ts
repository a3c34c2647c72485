import type pg from "pg";
import { countFailure } from "../../db/circuit-breakers.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { PublishError } from "../outputs/attempt.ts";
import { ChatPublisher } from "../outputs/chat.ts";
import { secretValue } from "../outputs/tokens.ts";
import type { RunInput } from "./types.ts";

/**
 * `queue.circuit_breaker`: after `failures` consecutive failed invocations of one pipeline, its
 * new invocations wait (they go back to the queue, never fail) for `cooldown`, and one message
 * goes to `escalate.chat` as it opens. `svc queue resume <pipeline>` closes it early.
 */
export interface BreakerDeps {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
}

/** What the gate reads of a run: its breaker as its claim read it (RunInput). */
export type GatedRun = Pick<RunInput, "pipeline" | "invocationId" | "breakerOpenUntil">;

/**
 * Whether the run waits: the pipeline has a breaker and it was open when the run was claimed (the
 * claim reads it, db/invocations.ts). A breaker opened since holds the runs claimed after it.
 */
export function breakerHold(deps: Pick<BreakerDeps, "config" | "logger">, run: GatedRun): boolean {
  const until = run.breakerOpenUntil;
  if (!deps.config.queue.circuitBreaker || !until) return false;
  deps.logger.info("circuit breaker open: the invocation waits", {
    event: "breaker.holding",
    pipeline: run.pipeline.name,
    invocation: run.invocationId,
    open_until: until.toISOString(),
  });
  return true;
}

/**
 * The pipeline whose breaker a completed run's end resets, in the statement that records the end
 * (db/invocations.ts finishInvocation); null when no breaker is configured.
 */
export function breakerToReset(config: Readonly<ConfigSnapshot>, pipeline: string): string | null {
  return config.queue.circuitBreaker ? pipeline : null;
}

/** Counts a failed invocation; the failure that opens the breaker sends the one escalation. */
export async function recordRunFailure(deps: BreakerDeps, pipeline: string): Promise<void> {
  const breaker = deps.config.queue.circuitBreaker;
  if (!breaker) return;
  const limits = { failures: breaker.failures ?? 5, cooldownMs: breaker.cooldownMs ?? 900_000 };
  try {
    const { row, opened } = await countFailure(deps.pool, pipeline, limits);
    if (!opened) return;
    deps.logger.warn("circuit breaker opened", {
      event: "breaker.opened",
      pipeline,
      failures: limits.failures,
      open_until: row.open_until?.toISOString(),
    });
    await escalate(deps, pipeline, limits.failures, row.open_until);
  } catch (error) {
    // the run's own record is already written; a breaker that missed one count is only late
    deps.logger.error("circuit breaker not updated", {
      event: "breaker.record_failed",
      pipeline,
      error: (error as Error).message,
    });
  }
}

async function escalate(
  deps: BreakerDeps,
  pipeline: string,
  failures: number,
  until: Date | null,
): Promise<void> {
  const target = deps.config.queue.circuitBreaker?.escalate?.chat;
  if (!target) return;
  const bot = deps.config.channels.chat.bots[target.bot];
  if (!bot) return;
  const text =
    `:rotating_light: svc circuit breaker opened for pipeline *${pipeline}*: ${failures} invocations failed in a row. ` +
    `New invocations wait until ${until?.toISOString() ?? "the cooldown ends"}. ` +
    `Read the failures with \`svc trigger list --status error\`; close it early with \`svc queue resume ${pipeline}\`.`;
  try {
    const chat = new ChatPublisher({
      apiUrl: deps.config.channels.chat.apiUrl ?? "https://slack.com/api/",
      token: await secretValue(bot.token, deps.pool, deps.config),
    });
    const posted = await chat.post({ channel: target.channel, text });
    deps.logger.info("circuit breaker escalated", { event: "breaker.escalated", pipeline, url: posted.url });
  } catch (error) {
    const message =
      error instanceof PublishError ? `${error.failure.status}: ${error.message}` : String(error);
    deps.logger.error("circuit breaker escalation failed", {
      event: "breaker.escalation_failed",
      pipeline,
      error: message,
    });
  }
}
