import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import { table } from "../../table.ts";

interface PullView {
  number: number;
  title: string;
  author: string | null;
  draft: boolean;
  url: string;
  pipelines: {
    pipeline: string;
    runs: number;
    last: {
      status: string;
      version: string | null;
      diagnostic: { code: string; message: string } | null;
      outputs: string[];
    };
  }[];
}

export default class RepoPulls extends Command {
  static override summary = "List a repository's open pull requests and what svc ran for them";
  static override description =
    "Lists the open pull requests of a configured repository (GET /repos/:owner/:name/pulls, every page), " +
    "each with the pipelines svc ran for it: how many runs, the last one's status and diagnostic code, and the " +
    "links of the outputs it published. A pull request with no run is one the reviewer missed. Needs `repos:read`.";
  static override examples = [
    "<%= config.bin %> repo pulls acme/widgets",
    "<%= config.bin %> repo pulls acme/widgets --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    repo: Args.string({
      description: "a repository of daemon.yaml's repos, as <owner>/<name>",
      required: true,
    }),
  };

  async run(): Promise<{ repo: string; pulls: PullView[] }> {
    const { args } = await this.parse(RepoPulls);
    const match = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(args.repo);
    if (!match) this.error(`"${args.repo}" is not <owner>/<name>, e.g. acme/widgets`, { exit: 2 });
    const answer: { repo: string; pulls: PullView[] } = await fromDaemon(this, (client) =>
      client.get(`/repos/${encodeURIComponent(match[1]!)}/${encodeURIComponent(match[2]!)}/pulls`),
    );
    if (!this.jsonEnabled()) {
      if (!answer.pulls.length) this.log(`${answer.repo} has no open pull requests`);
      else
        this.log(
          table(
            ["PR", "TITLE", "AUTHOR", "PIPELINE", "RUNS", "LAST", "CODE", "OUTPUTS"],
            answer.pulls.flatMap((pull) => {
              const title = pull.title.length > 50 ? `${pull.title.slice(0, 49)}…` : pull.title;
              if (!pull.pipelines.length)
                return [[`#${pull.number}`, title, pull.author, "(no run)", 0, "-", "-", "-"]];
              return pull.pipelines.map((p) => [
                `#${pull.number}`,
                title,
                pull.author,
                p.pipeline,
                p.runs,
                p.last.status,
                p.last.diagnostic?.code,
                p.last.outputs.join(" ") || "-",
              ]);
            }),
          ),
        );
    }
    return answer;
  }
}
