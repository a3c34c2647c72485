import { type RateView, rateWithInterval } from "./eval-views.ts";
import { table } from "./table.ts";

/** The shapes `svc eval backtest` reads from the daemon API (POST/GET /evals/backtests). */
export interface BacktestStarted {
  backtest: {
    id: string;
    pipeline: string;
    versionFile: string;
    candidateVersion: string;
    liveVersion: string;
    replayAnswers?: boolean;
    pulls: { repo: string; number: number; event: string; head: string; finalHead: string }[];
    skipped: { repo: string; number: number; reason: string }[];
  };
}

interface PullComparisonView {
  findings: number;
  onHumanLines: number;
  onFixedLines: number;
  humanComments: number;
  humanCommentsFound: number;
  fixedFiles: number;
}

interface VersionTotalsView {
  pulls: number;
  findings: number;
  onHumanLines: RateView;
  onFixedLines: RateView;
  humanCommentsFound: RateView;
}

export interface BacktestReportView {
  backtest: {
    id: string;
    pipeline: string;
    versionFile: string;
    candidateVersion: string;
    liveVersion: string;
    replayAnswers?: boolean;
  };
  total: number;
  done: number;
  items: {
    repo: string;
    number: number;
    head: string;
    status: string;
    invocation: string | null;
    code: string | null;
    liveVersion: string | null;
    comparison: { candidate: PullComparisonView | null; live: PullComparisonView | null } | null;
    comparisonError?: string;
    answers?: { recorded: number; replayed: number; diverged: number; missing: number };
  }[];
  totals: { candidate: VersionTotalsView; live: VersionTotalsView | null };
}

const cells = (c: PullComparisonView | null | undefined) =>
  c
    ? [c.findings, c.onHumanLines, c.onFixedLines, `${c.humanCommentsFound}/${c.humanComments}`]
    : ["-", "-", "-", "-"];

/** Per pull request, then the totals of each version with their intervals. */
export function backtestReport(report: BacktestReportView): string {
  const { backtest } = report;
  // a backtest with replayed answers says, per pull request, how the candidate's calls were answered
  const replay = backtest.replayAnswers === true;
  const lines = [
    `${backtest.id}: ${backtest.pipeline} ${backtest.candidateVersion} (${backtest.versionFile}) against the live ${backtest.liveVersion}, ${report.done}/${report.total} pull requests compared${replay ? ", model answers replayed from the live runs" : ""}`,
    "",
    table(
      [
        "PULL",
        "OLD HEAD",
        "RUN",
        "FINDINGS",
        "ON HUMAN LINES",
        "ON FIXED LINES",
        "HUMAN FOUND",
        "LIVE FINDINGS",
        "LIVE ON HUMAN",
        "LIVE ON FIXED",
        "LIVE HUMAN FOUND",
        ...(replay ? ["MODEL ANSWERS"] : []),
      ],
      report.items.map((item) => [
        `${item.repo}#${item.number}`,
        item.head.slice(0, 12),
        runCell(item),
        ...cells(item.comparison?.candidate),
        ...cells(item.comparison?.live),
        ...(replay ? [answersCell(item.answers)] : []),
      ]),
    ),
    "",
    table(
      ["VERSION", "PULLS", "FINDINGS", "ON HUMAN LINES", "ON LATER-FIXED LINES", "HUMAN COMMENTS FOUND"],
      [
        totalsRow(`${backtest.candidateVersion} (candidate)`, report.totals.candidate),
        ...(report.totals.live ? [totalsRow(`${backtest.liveVersion} (live)`, report.totals.live)] : []),
      ],
    ),
    "",
    "shares with 95% Wilson intervals; a finding meets a human comment or a later fix within 3 lines of it",
  ];
  if (!report.totals.live)
    lines.push(
      "the live version has no recorded findings on these pull requests to set beside the candidate's",
    );
  return lines.join("\n");
}

/** The candidate run's state, its code when it did not complete, and why it is not compared yet. */
function runCell(item: BacktestReportView["items"][number]): string {
  const code = item.code && item.status !== "completed" ? ` (${item.code})` : "";
  const why = item.comparisonError ? ` (not compared: ${item.comparisonError})` : "";
  return `${item.status}${code}${why}`;
}

/** `replayed 3/3 (diverged 3, missing 0)`: calls answered from the 3 recorded answers of the live run. */
function answersCell(answers: BacktestReportView["items"][number]["answers"]): string {
  if (!answers) return "-";
  if (answers.recorded === 0) return "none recorded";
  return `replayed ${answers.replayed}/${answers.recorded} (diverged ${answers.diverged}, missing ${answers.missing})`;
}

function totalsRow(label: string, totals: VersionTotalsView): string[] {
  return [
    label,
    String(totals.pulls),
    String(totals.findings),
    rateWithInterval(totals.onHumanLines),
    rateWithInterval(totals.onFixedLines),
    rateWithInterval(totals.humanCommentsFound),
  ];
}

/** `GET /evals/backtests` as the CLI reads it. */
export interface BacktestList {
  backtests: {
    id: string;
    pipeline: string;
    candidateVersion: string;
    liveVersion: string;
    createdAt: string;
    pulls: number;
    ended: number;
    compared: number;
  }[];
}

/** The backtests, newest first, one line each. */
export function backtestList(list: BacktestList): string {
  if (list.backtests.length === 0)
    return "no backtests yet: start one with svc eval backtest <pipeline> --version-file <file> --last 30d";
  return table(
    ["ID", "PIPELINE", "CANDIDATE", "LIVE", "STARTED", "RUNS ENDED", "COMPARED"],
    list.backtests.map((b) => [
      b.id,
      b.pipeline,
      b.candidateVersion,
      b.liveVersion,
      b.createdAt.slice(0, 16).replace("T", " "),
      `${b.ended}/${b.pulls}`,
      `${b.compared}/${b.pulls}`,
    ]),
  );
}
