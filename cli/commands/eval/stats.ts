import { Command, Flags } from "@oclif/core";
import { type RateView, rateWithInterval } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";
import { table } from "../../table.ts";

interface StatsView {
  pipeline: string;
  versions: {
    version: string | null;
    target: string | null;
    runs: number;
    completed: RateView;
    outputFailed: RateView;
    codes: Record<string, number>;
    p50Ms: number | null;
    p90Ms: number | null;
    tokens: {
      runs: number;
      input: number;
      output: number;
      meanInput: number;
      meanOutput: number;
      costUsd?: number | null;
    } | null;
  }[];
  agreement: RateView;
  evalRuns: { id: string; pipelineVersion: string; cases: number; finished: number; agreement: RateView }[];
}

const ms = (value: number | null) => (value === null ? "-" : `${Math.round(value)}ms`);

/** `12400/830 (mean 6200/415 over 2 runs)`: sums, then the mean per run that reported usage. */
function tokens(usage: StatsView["versions"][number]["tokens"]): string {
  if (!usage) return "-";
  const mean = `${Math.round(usage.meanInput)}/${Math.round(usage.meanOutput)}`;
  const cost = typeof usage.costUsd === "number" ? ` $${usage.costUsd.toFixed(4)}` : "";
  return `${usage.input}/${usage.output}${cost} (mean ${mean} over ${usage.runs} run${usage.runs === 1 ? "" : "s"})`;
}

export default class EvalStats extends Command {
  static override summary = "Show a pipeline's statistics per version and target";
  static override description =
    "Shows GET /evals/stats: per pipeline version × target the runs, completed and output_failed rates with " +
    "95% Wilson intervals, diagnostic codes, p50/p90 durations and the input/output tokens of the runs whose " +
    "runtime reported usage (sum, and mean per run); then how often the curated cases' runs " +
    "agreed with what the team expected, and each eval run's agreement. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval stats --pipeline pr-review",
    "<%= config.bin %> eval stats --pipeline pr-review --since 7d --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    pipeline: Flags.string({
      description: "the pipeline (may be left out when the daemon runs only one)",
      helpValue: "<name>",
    }),
    since: Flags.string({ description: "only runs since (ISO time or 30m, 24h, 7d)", helpValue: "<when>" }),
  };

  async run(): Promise<StatsView> {
    const { flags } = await this.parse(EvalStats);
    const answer: StatsView = await fromDaemon(this, (client) =>
      client.get("/evals/stats", { pipeline: flags.pipeline, since: flags.since }),
    );
    if (!this.jsonEnabled()) {
      if (!answer.versions.length) this.log(`no finished runs of ${answer.pipeline}`);
      else
        this.log(
          table(
            [
              "VERSION",
              "TARGET",
              "RUNS",
              "COMPLETED",
              "OUTPUT_FAILED",
              "P50",
              "P90",
              "TOKENS IN/OUT",
              "CODES",
            ],
            answer.versions.map((row) => [
              row.version ?? "(unrecorded)",
              row.target,
              row.runs,
              rateWithInterval(row.completed),
              rateWithInterval(row.outputFailed),
              ms(row.p50Ms),
              ms(row.p90Ms),
              tokens(row.tokens),
              Object.entries(row.codes)
                .map(([code, n]) => `${code}:${n}`)
                .join(" ") || "-",
            ]),
          ),
        );
      this.log(`\ncurated cases agreeing with the expectation: ${rateWithInterval(answer.agreement)}`);
      if (answer.evalRuns.length)
        this.log(
          `\n${table(
            ["EVAL RUN", "VERSION", "CASES", "FINISHED", "AGREEMENT"],
            answer.evalRuns.map((run) => [
              run.id,
              run.pipelineVersion,
              run.cases,
              run.finished,
              rateWithInterval(run.agreement),
            ]),
          )}`,
        );
    }
    return answer;
  }
}
