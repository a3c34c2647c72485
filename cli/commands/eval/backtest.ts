import { setTimeout as sleep } from "node:timers/promises";
import { Args, Command, Flags } from "@oclif/core";
import {
  type BacktestList,
  type BacktestReportView,
  type BacktestStarted,
  backtestList,
  backtestReport,
} from "../../eval-backtest-view.ts";
import { fromDaemon } from "../../from-daemon.ts";

const BACKTEST_ID = /^bkt_[a-z2-7]+$/;

export default class EvalBacktest extends Command {
  static override summary =
    "Replay a candidate pipeline version on merged pull requests and judge its findings";
  static override description =
    "Replays the recorded events of merged pull requests (POST /evals/backtests): for each pull request svc " +
    "recorded as merged (--last: in that period; --pulls: those numbers), the first recorded pull_request " +
    "delivery (opened, reopened, synchronize; --at last: the last one before the merge) runs the pipeline's " +
    "candidate version at the head it names, its outputs held back (nothing is posted; the would-be review is " +
    "the run's held/outputs.md). The candidate is the pipeline's shadow.version_file (svc pipeline shadow). When " +
    "the runs have ended, each pull request's findings are set against the lines human reviewers commented on " +
    "and the lines commits pushed after that head changed before the merge (within 3 lines), beside the live " +
    "version's findings on the same events where it ran, with totals and 95% Wilson intervals. With " +
    "--replay-answers the candidate's model calls are answered with the model answers the live runs recorded " +
    "(the pipeline's record_answers), never by the model API, so only the prompt differs. Waits, printing " +
    "progress, unless --no-wait; `svc eval backtest bkt_…` shows (and waits for) a backtest started earlier, " +
    "and `svc eval backtest` alone lists the newest backtests (GET /evals/backtests). " +
    'Needs `evals:write` and `pipelines:invoke`. See docs/evals.md, "Backtests".';
  static override examples = [
    "<%= config.bin %> eval backtest pr-review --version-file pipelines/pr-review.next.yaml --last 30d",
    "<%= config.bin %> eval backtest pr-review --version-file pipelines/pr-review.next.yaml --pulls acme/widgets#1..#200",
    "<%= config.bin %> eval backtest pr-review --version-file pipelines/pr-review.next.yaml --pulls acme/widgets#12 --pulls acme/api#3..#9 --at last",
    "<%= config.bin %> eval backtest pr-review --version-file pipelines/pr-review.next.yaml --last 30d --replay-answers",
    "<%= config.bin %> eval backtest pr-review --version-file pipelines/pr-review.next.yaml --last 7d --no-wait",
    "<%= config.bin %> eval backtest bkt_2m4k6q8s0u2w4y6a8c0e --json",
    "<%= config.bin %> eval backtest",
  ];
  static override enableJsonFlag = true;
  static override args = {
    pipeline: Args.string({
      description:
        "the pipeline whose candidate is replayed, or a backtest id (bkt_…) to show; none: list the newest backtests",
    }),
  };
  static override flags = {
    "version-file": Flags.string({
      description: "the candidate: the pipeline's shadow.version_file, in the daemon's pipelines/ directory",
      helpValue: "pipelines/<file>.yaml",
    }),
    last: Flags.string({ description: "pull requests merged in this period", helpValue: "<30d>" }),
    pulls: Flags.string({
      description: "pull requests by number, one or a range (repeatable)",
      multiple: true,
      multipleNonGreedy: true,
      helpValue: "<owner/repo#1..#200>",
    }),
    at: Flags.string({
      description: "which recorded delivery of each pull request is replayed",
      options: ["first", "last"],
      default: "first",
    }),
    limit: Flags.integer({
      description: "at most this many pull requests, newest merges first",
      min: 1,
      max: 1000,
    }),
    "replay-answers": Flags.boolean({
      description:
        "answer the candidate's model calls with the live runs' recorded answers (record_answers), not the model API",
      default: false,
    }),
    wait: Flags.boolean({
      description: "wait for the runs and print the comparison (--no-wait prints the id)",
      default: true,
      allowNo: true,
    }),
    "poll-ms": Flags.integer({
      description: "how often, in milliseconds, the progress is read from the daemon while waiting",
      default: 2000,
      min: 50,
      helpValue: "<ms>",
    }),
  };

  async run(): Promise<BacktestReportView | BacktestStarted | BacktestList> {
    const { args, flags } = await this.parse(EvalBacktest);
    if (args.pipeline === undefined) {
      const list: BacktestList = await fromDaemon(this, (client) => client.get("/evals/backtests"));
      if (!this.jsonEnabled()) this.log(backtestList(list));
      return list;
    }
    let id = args.pipeline;
    if (!BACKTEST_ID.test(id)) {
      const versionFile = flags["version-file"];
      if (!versionFile)
        this.error(
          "name the candidate with --version-file pipelines/<file>.yaml (the pipeline's shadow.version_file)",
          {
            exit: 2,
          },
        );
      if ((flags.last === undefined) === (flags.pulls === undefined))
        this.error(
          "name the pull requests with exactly one of --last <30d> or --pulls <owner/repo#1..#200>",
          {
            exit: 2,
          },
        );
      const started: BacktestStarted = await fromDaemon(this, (client) =>
        client.post("/evals/backtests", {
          pipeline: args.pipeline,
          version_file: versionFile.replace(/^\.\//, ""),
          ...(flags.last !== undefined ? { last: flags.last } : { pulls: flags.pulls }),
          at: flags.at,
          ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
          ...(flags["replay-answers"] ? { replay_answers: true } : {}),
        }),
      );
      id = started.backtest.id;
      if (!flags.wait) {
        if (!this.jsonEnabled()) this.log(id);
        return started;
      }
      if (!this.jsonEnabled()) {
        const { backtest } = started;
        this.log(
          `${id}: ${backtest.pipeline} ${backtest.candidateVersion} replaying on ${backtest.pulls.length} merged pull requests, outputs held back${backtest.replayAnswers ? ", model answers replayed from the live runs" : ""}`,
        );
        for (const skipped of backtest.skipped)
          this.log(`  skipped ${skipped.repo}#${skipped.number}: ${skipped.reason}`);
      }
    }
    let seen = -1;
    for (;;) {
      const report: BacktestReportView = await fromDaemon(this, (client) =>
        client.get(`/evals/backtests/${id}`),
      );
      const finished = report.done === report.total;
      if (!this.jsonEnabled() && flags.wait && report.done !== seen && !finished)
        this.log(`${report.done}/${report.total} done`);
      seen = report.done;
      if (finished || !flags.wait) {
        if (!this.jsonEnabled()) {
          if (finished) this.log(`${report.done}/${report.total} done`);
          this.log(backtestReport(report));
        }
        return report;
      }
      await sleep(flags["poll-ms"]);
    }
  }
}
