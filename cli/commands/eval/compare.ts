import { Command, Flags } from "@oclif/core";
import { type ShadowComparisonView, shadowReport } from "../../eval-shadow-view.ts";
import { type ComparisonView, pValue, rateWithInterval } from "../../eval-views.ts";
import { fromDaemon } from "../../from-daemon.ts";
import { table } from "../../table.ts";

export default class EvalCompare extends Command {
  static override summary = "Compare two cohorts of a pipeline's runs";
  static override description =
    "Compares cohort b against cohort a (GET /evals/compare): each rate with its 95% Wilson interval and a " +
    "two-sided test (Fisher's exact for small counts, else chi-square), the p50 durations with a Mann-Whitney U " +
    "p-value, and a verdict that says when the cohorts are too small to conclude (under 10 runs each). A cohort " +
    "is version:<v>, target:<name>, dates:<from>..<to> (to exclusive), run:<evr_…> (an eval run's replays), " +
    "original:<evr_…> (the original runs of the cases it replayed) or cases[:<tag>]. With --shadow <pipeline> instead of --a/--b: the pipeline's live version against its shadow " +
    "candidate over the events both ran on, judged by what people did with their findings (resolved with a change, " +
    "dismissed, thumbed down; the candidate's by the live finding on the same lines), findings, tokens, cost and " +
    "duration per run, and what shadowing cost as a share of the live runs' cost. Needs `evals:write`.";
  static override examples = [
    "<%= config.bin %> eval compare --a version:1.2.0 --b version:1.3.0",
    "<%= config.bin %> eval compare --pipeline pr-review --a target:claude-main --b target:gpt-backup",
    "<%= config.bin %> eval compare --pipeline pr-review --a original:evr_2m4k6q8s0u2w4y6a8c0e --b run:evr_2m4k6q8s0u2w4y6a8c0e",
    "<%= config.bin %> eval compare --pipeline pr-review --a dates:2026-11-01..2026-11-08 --b dates:2026-11-08..2026-11-15 --json",
    "<%= config.bin %> eval compare --shadow pr-review",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    pipeline: Flags.string({
      description: "the pipeline (may be left out when the daemon runs only one)",
      helpValue: "<name>",
    }),
    a: Flags.string({ description: "the baseline cohort", helpValue: "<cohort>" }),
    b: Flags.string({ description: "the cohort compared with it", helpValue: "<cohort>" }),
    shadow: Flags.string({
      description: "compare this pipeline's live version with its shadow candidate (instead of --a/--b)",
      helpValue: "<pipeline>",
    }),
  };

  async run(): Promise<ComparisonView | ShadowComparisonView> {
    const { flags } = await this.parse(EvalCompare);
    if (flags.shadow !== undefined) {
      const also = (["a", "b", "pipeline"] as const).filter((name) => flags[name] !== undefined);
      if (also.length)
        this.error(
          `--shadow compares a pipeline's live version with its shadow candidate and names the pipeline itself: leave out ${also.map((name) => `--${name}`).join(" and ")} (or --shadow, to compare two cohorts)`,
          { exit: 2 },
        );
      const answer: ShadowComparisonView = await fromDaemon(this, (client) =>
        client.get("/evals/compare", { shadow: flags.shadow }),
      );
      if (!this.jsonEnabled()) this.log(shadowReport(answer));
      return answer;
    }
    if (flags.a === undefined || flags.b === undefined)
      this.error(
        "give two cohorts with --a and --b (e.g. --a version:1.2.0 --b version:1.3.0), or --shadow <pipeline>",
        {
          exit: 2,
        },
      );
    const answer: ComparisonView = await fromDaemon(this, (client) =>
      client.get("/evals/compare", { pipeline: flags.pipeline, a: flags.a, b: flags.b }),
    );
    if (!this.jsonEnabled()) {
      const d = answer.duration;
      const ms = (value: number | null) => (value === null ? "-" : `${Math.round(value)}ms`);
      this.log(
        table(
          [
            "MEASURE",
            `A: ${answer.a.cohort} (${answer.a.runs})`,
            `B: ${answer.b.cohort} (${answer.b.runs})`,
            "TEST",
            "P",
          ],
          [
            ...answer.rates.map((rate) => [
              `${rate.name} rate`,
              rateWithInterval(rate.a),
              rateWithInterval(rate.b),
              rate.test,
              pValue(rate.p),
            ]),
            [
              "p50 duration",
              ms(d.a.p50Ms),
              ms(d.b.p50Ms),
              d.method ? `mann_whitney (${d.method})` : null,
              pValue(d.p),
            ],
          ],
        ),
      );
      this.log(`\n${answer.verdict}`);
    }
    return answer;
  }
}
