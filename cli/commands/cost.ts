import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../from-daemon.ts";
import { table } from "../table.ts";

interface CostLine {
  key?: string | null;
  runs: number;
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

interface CostsView {
  by: "repo" | "pipeline" | "author";
  since: string;
  total: CostLine;
  rows: CostLine[];
  days: { day: string; tokens: number; costUsd: number | null }[];
}

const usd = (value: number | null) => (value === null ? "unpriced" : `$${value.toFixed(4)}`);
const count = (value: number) => value.toLocaleString("en-US");

export default class Cost extends Command {
  static override summary = "Show what runs cost, per repository, pipeline or author";
  static override description =
    "Shows GET /costs: the agent tasks' tokens (input and output, as the worker's model gateway counted " +
    "them) and their cost in USD at each target's `price`, grouped by repository, pipeline or the event's " +
    'author, with the total. A group none of whose targets has a price says "unpriced". Needs `triggers:read`.';
  static override examples = [
    "<%= config.bin %> cost",
    "<%= config.bin %> cost --by repo --since 30d",
    "<%= config.bin %> cost --by author --since 2025-06-01 --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    by: Flags.string({
      description: "how to group the runs",
      options: ["repo", "pipeline", "author"],
      default: "pipeline",
    }),
    since: Flags.string({
      description: "only tasks started since (ISO time or 24h, 7d, 30d)",
      default: "30d",
      helpValue: "<when>",
    }),
  };

  async run(): Promise<CostsView> {
    const { flags } = await this.parse(Cost);
    const answer: CostsView = await fromDaemon(this, (client) =>
      client.get("/costs", { by: flags.by, since: flags.since }),
    );
    if (!this.jsonEnabled()) {
      if (answer.rows.length === 0) this.log(`no model usage since ${answer.since}`);
      else
        this.log(
          table(
            [answer.by.toUpperCase(), "RUNS", "TOKENS", "INPUT", "OUTPUT", "COST"],
            [...answer.rows, { ...answer.total, key: "TOTAL" }].map((row) => [
              row.key ?? "(none)",
              row.runs,
              count(row.tokens),
              count(row.inputTokens),
              count(row.outputTokens),
              usd(row.costUsd),
            ]),
          ),
        );
    }
    return answer;
  }
}
