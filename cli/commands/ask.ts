import { Args, Command, Flags } from "@oclif/core";
import { fromDaemon } from "../from-daemon.ts";

export interface AskJson {
  answer: string;
  target: string;
  method: string;
  sources: { path: string; line: number; score: number }[];
}

/** A model may take a while; the daemon's own target time-outs end a hopeless ask first. */
const ASK_TIMEOUT_MS = 15 * 60_000;

export default class Ask extends Command {
  static override summary = "Ask a question of the team's knowledge";
  static override description =
    "Sends the question to the running daemon (POST /ask at SVC_DAEMON_URL), which retrieves passages from " +
    "the documents under .svc/knowledge/ and asks the first usable target: those given with --target, in the " +
    "order given (an ordered failover route), else ask.targets of daemon.yaml. Prints the answer, then the " +
    "sources (path:line and score). Needs `knowledge:read`. When no target can answer, each target's reason is " +
    "printed and the exit code is 1.";
  static override examples = [
    '<%= config.bin %> ask "How do I restore a backup?"',
    '<%= config.bin %> ask "Who is on call?" --target gpt --target local-agent',
    'SVC_DAEMON_URL=https://svc.example.com <%= config.bin %> ask "How do we deploy?" --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    question: Args.string({ description: "the question (up to 8 KB)", required: true }),
  };
  static override flags = {
    target: Flags.string({
      description: "a target to ask; repeat it for an ordered failover route (default: ask.targets)",
      helpValue: "<name>",
      multiple: true,
      // one value per --target, so the question after it stays the argument
      multipleNonGreedy: true,
    }),
  };

  async run(): Promise<AskJson> {
    const { args, flags } = await this.parse(Ask);
    const answer: AskJson = await fromDaemon(
      this,
      (client) =>
        client.post<AskJson>(
          "/ask",
          { question: args.question, ...(flags.target?.length ? { targets: flags.target } : {}) },
          ASK_TIMEOUT_MS,
        ),
      (error) => {
        if (error.code === "ask_unavailable") {
          this.logToStderr(error.message);
          for (const entry of (error.details.targets as { target: string; reason: string }[] | undefined) ??
            [])
            this.logToStderr(`  ${entry.target}: ${entry.reason}`);
          this.exit(1);
        }
      },
    );
    if (!this.jsonEnabled()) {
      this.log(answer.answer);
      this.log("");
      this.log(`answered by ${answer.target} (retrieval: ${answer.method})`);
      if (answer.sources.length === 0) this.log("sources: none");
      else {
        this.log("sources:");
        for (const source of answer.sources)
          this.log(`  ${source.path}:${source.line}  (score ${source.score.toFixed(3)})`);
      }
    }
    return answer;
  }
}
