import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import { expireTranscripts } from "../../db/artifacts.ts";
import { expireRecordedAnswers } from "../../db/recorded-answers.ts";
import { deleteDiscardedOlderThan } from "../../db/trigger-status.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

export interface SweepResult {
  checkouts: number;
  transcripts: number;
  discardedTriggers: number;
}

async function olderThan(path: string, cutoff: number): Promise<boolean> {
  try {
    return (await stat(path)).mtimeMs < cutoff;
  } catch {
    return false; // gone already (or unreadable): nothing for this sweep to remove
  }
}

/**
 * The two retention tiers of `workspaces`: regenerable `checkout/` directories go after
 * `checkoutRetentionDays`; transcripts after `transcriptRetentionDays`, never sooner than
 * checkouts. Discarded triggers share the shorter tier. Notes live in the database and are never
 * touched here.
 */
export async function sweepWorkspaces(
  db: pg.Pool,
  config: Pick<ConfigSnapshot, "dir" | "workspaces">,
  now = Date.now(),
): Promise<SweepResult> {
  const checkoutDays = config.workspaces.checkoutRetentionDays;
  const transcriptDays = Math.max(config.workspaces.transcriptRetentionDays, checkoutDays);
  const root = join(config.dir, "workspaces");
  const result: SweepResult = { checkouts: 0, transcripts: 0, discardedTriggers: 0 };
  const runs = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const run of runs) {
    // hidden folders are the worker's own (.repos: the repository cache, bounded by its own size; .gateway-*)
    if (!run.isDirectory() || run.name.startsWith(".")) continue;
    const runDir = join(root, run.name);
    const checkout = join(runDir, "checkout");
    if (await olderThan(checkout, now - checkoutDays * DAY_MS)) {
      await rm(checkout, { recursive: true, force: true });
      result.checkouts += 1;
    }
    const invocations = await readdir(runDir, { withFileTypes: true }).catch(() => []);
    for (const invocation of invocations) {
      // an invocation's directory, or an orchestrated task's (worker/tasks/claim.ts), which has its own checkout
      if (!invocation.isDirectory() || !/^(inv|tsk)_/.test(invocation.name)) continue;
      const own = join(runDir, invocation.name, "checkout");
      if (invocation.name.startsWith("tsk_") && (await olderThan(own, now - checkoutDays * DAY_MS))) {
        await rm(own, { recursive: true, force: true });
        result.checkouts += 1;
      }
      const transcript = join(runDir, invocation.name, "logs", "transcript.log");
      if (await olderThan(transcript, now - transcriptDays * DAY_MS)) {
        await rm(transcript, { force: true });
        result.transcripts += 1;
      }
    }
  }
  await expireTranscripts(db, transcriptDays);
  // recorded model answers (record_answers) hold what transcripts do: kept as long
  await expireRecordedAnswers(db, transcriptDays);
  result.discardedTriggers = await deleteDiscardedOlderThan(db, checkoutDays);
  return result;
}
