import type pg from "pg";
import { type BacktestItem, type BacktestRow, backtestItems, saveComparison } from "../../db/backtests.ts";
import { type ReplayCounts, recordedCounts, replayCounts } from "../../db/recorded-answers.ts";
import { botName } from "../../shared/config/authors.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import type { CodehostReads } from "../repos/codehost-reads.ts";
import {
  type ComparedFile,
  changedLines,
  comparePull,
  findingsOf,
  type HumanComment,
  humanComments,
  type PullComparison,
  totals,
  type VersionTotals,
} from "./backtest-compare.ts";

/**
 * A backtest as `GET /evals/backtests/:id` answers it: each pull request with its candidate run and,
 * once that run has ended, the comparison of the candidate's findings (and the live version's on
 * the replayed event, where it ran) with the pull request's human review comments and the lines
 * later commits changed; then the totals of each version. A comparison is computed once, with two
 * reads of the code host (the review comments, the comparison of the replayed head with the last
 * one), and kept; a read the code host refuses is reported on its item and tried again next time.
 */
export interface StoredComparison {
  candidate: PullComparison | null;
  live: PullComparison | null;
}

export interface ReportItem {
  repo: string;
  number: number;
  head: string;
  finalHead: string;
  trigger: string | null;
  /** queued, running, completed, failed, cancelled; `discarded` when its replay ran nothing */
  status: string;
  invocation: string | null;
  code: string | null;
  liveInvocation: string | null;
  liveVersion: string | null;
  comparison: StoredComparison | null;
  /** why the comparison is not there yet although the run ended (the code host refused a read) */
  comparisonError?: string;
  /**
   * a backtest with `replayAnswers`: the model answers the live run recorded, and how the gateway
   * answered the candidate's model calls from them (`replayed` counts the diverged ones too)
   */
  answers?: ReplayCounts & { recorded: number };
}

export interface BacktestReport {
  backtest: BacktestRow;
  total: number;
  done: number;
  items: ReportItem[];
  totals: { candidate: VersionTotals; live: VersionTotals | null };
}

/** The two reads a comparison makes, of GitHub or of GitLab (ingress/repos/gitlab-reads.ts). */
type BacktestReads = Pick<CodehostReads, "reviewComments" | "compare">;

const ENDED = new Set(["completed", "failed", "cancelled"]);

/** The candidate run's state: its invocation's, or its trigger's when the replay made none. */
function statusOf(item: BacktestItem): string {
  if (item.candidate) return item.candidate.status;
  if (
    item.triggerStatus === "discarded" ||
    item.triggerStatus === "error" ||
    item.triggerStatus === "completed"
  )
    return "discarded";
  return item.triggerStatus ?? "queued";
}

export async function backtestReport(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot>; logger: Logger; reads: () => BacktestReads },
  backtest: BacktestRow,
): Promise<BacktestReport> {
  const items = await backtestItems(deps.pool, backtest);
  const answers = backtest.replayAnswers ? await answersOf(deps.pool, items) : undefined;
  const own = [botName(deps.config), `${botName(deps.config)}[bot]`];
  const report: ReportItem[] = [];
  for (const item of items) {
    const status = statusOf(item);
    const entry: ReportItem = {
      repo: item.repo,
      number: item.number,
      head: item.head,
      finalHead: item.finalHead,
      trigger: item.trigger,
      status,
      invocation: item.candidate?.invocation ?? null,
      code: item.candidate?.code ?? null,
      liveInvocation: item.live?.invocation ?? null,
      liveVersion: item.live?.version ?? null,
      comparison: (item.comparison as StoredComparison | null) ?? null,
      ...(answers ? { answers: answers(item) } : {}),
    };
    if (!entry.comparison && (ENDED.has(status) || status === "discarded")) {
      try {
        entry.comparison = await compareItem(deps.reads(), item, own);
        await saveComparison(deps.pool, backtest.id, item, entry.comparison);
      } catch (error) {
        entry.comparisonError = error instanceof Error ? error.message : String(error);
        deps.logger.warn("backtest comparison not computed", {
          event: "api.backtest_compare_failed",
          backtest: backtest.id,
          repo: item.repo,
          number: item.number,
          error: entry.comparisonError,
        });
      }
    }
    report.push(entry);
  }
  const compared = report.flatMap((entry) => (entry.comparison ? [entry.comparison] : []));
  const candidate = compared.flatMap((c) => (c.candidate ? [c.candidate] : []));
  const live = compared.flatMap((c) => (c.live ? [c.live] : []));
  return {
    backtest,
    total: report.length,
    done: report.filter((entry) => entry.comparison !== null).length,
    items: report,
    totals: { candidate: totals(candidate), live: live.length ? totals(live) : null },
  };
}

/** Per item: the live run's recorded answers and how the candidate's calls were answered from them. */
async function answersOf(
  pool: pg.Pool,
  items: BacktestItem[],
): Promise<(item: BacktestItem) => ReplayCounts & { recorded: number }> {
  const ids = (pick: (item: BacktestItem) => string | undefined) =>
    items.flatMap((item) => {
      const id = pick(item);
      return id ? [id] : [];
    });
  const [replays, recorded] = await Promise.all([
    replayCounts(
      pool,
      ids((item) => item.candidate?.invocation),
    ),
    recordedCounts(
      pool,
      ids((item) => item.live?.invocation),
    ),
  ]);
  const none = { replayed: 0, diverged: 0, missing: 0 };
  return (item) => ({
    recorded: (item.live && recorded.get(item.live.invocation)) || 0,
    ...((item.candidate && replays.get(item.candidate.invocation)) || none),
  });
}

async function compareItem(
  reads: BacktestReads,
  item: BacktestItem,
  own: string[],
): Promise<StoredComparison> {
  const candidateFindings = item.candidate?.status === "completed" ? findingsOf(item.candidate) : null;
  const liveFindings = item.live?.status === "completed" ? findingsOf(item.live) : null;
  if (!candidateFindings && !liveFindings) return { candidate: null, live: null };
  const [comments, files] = await Promise.all([
    reads.reviewComments(item.repo, item.number),
    item.head === item.finalHead ? Promise.resolve([]) : reads.compare(item.repo, item.head, item.finalHead),
  ]);
  const human = humanComments(comments as HumanComment[], own);
  const changed = changedLines(files as ComparedFile[]);
  return {
    candidate: candidateFindings ? comparePull(candidateFindings, human, changed) : null,
    live: liveFindings ? comparePull(liveFindings, human, changed) : null,
  };
}
