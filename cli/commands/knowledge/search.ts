import { Args, Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface SearchAnswer {
  query: string;
  method: string;
  passages: { path: string; line: number; score: number; title: string; text: string }[];
}

export default class KnowledgeSearch extends Command {
  static override summary = "Search the knowledge documents without asking a model";
  static override description =
    "Asks the running daemon (GET /knowledge?q= at SVC_DAEMON_URL) for the passages a run or an ask would " +
    "retrieve for the query, best first, with path:line and score. Needs `knowledge:read`.";
  static override examples = [
    '<%= config.bin %> knowledge search "restore a backup"',
    '<%= config.bin %> knowledge search "deploy window" --limit 3 --json',
  ];
  static override enableJsonFlag = true;
  static override args = { query: Args.string({ description: "what to look for", required: true }) };
  static override flags = {
    limit: Flags.integer({
      description: "passages to show (default: knowledge.retrieval.topK)",
      min: 1,
      max: 100,
    }),
  };

  async run(): Promise<SearchAnswer> {
    const { args, flags } = await this.parse(KnowledgeSearch);
    const answer: SearchAnswer = await fromDaemon(this, (client) =>
      client.get<SearchAnswer>("/knowledge", {
        q: args.query,
        limit: flags.limit,
      }),
    );
    if (!this.jsonEnabled()) {
      if (answer.passages.length === 0) this.log(`nothing found for "${answer.query}"`);
      for (const passage of answer.passages) {
        this.log(`${passage.path}:${passage.line}  (score ${passage.score.toFixed(3)})`);
        for (const line of passage.text.split("\n")) this.log(`    ${line}`);
      }
    }
    return answer;
  }
}
