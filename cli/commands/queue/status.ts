import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface QueueJob {
  id: string;
  task: string;
  lane: string;
  pipeline: string | null;
  trigger: string | null;
  workspace: string | null;
  changedAt: string;
  attempts: number;
  maxAttempts: number;
}
interface QueueAnswer {
  counts: { active: number; waiting: number; delayed: number; failed: number };
  recent: { since: string; hours: number; failed: number };
  details?: Record<"active" | "waiting" | "delayed" | "failed", QueueJob[]>;
  /** pipelines whose circuit breaker is open (absent from older daemons) */
  breakers?: { pipeline: string; openedAt: string | null; openUntil: string | null }[];
}

export default class QueueStatus extends Command {
  static override summary = "Show the work queue: active, waiting and delayed jobs";
  static override description =
    "Prints the active, waiting and delayed job counts (GET /queue/status). Whenever jobs have failed it adds " +
    "`failed: <recent> in the last <N>h, <total> on the queue`, and one `breaker open:` line per pipeline whose " +
    "circuit breaker is open. --verbose lists the failed history, filtered " +
    "by --since (default 24h), --limit and --offset. Needs `admin`.";
  static override examples = [
    "<%= config.bin %> queue status",
    "<%= config.bin %> queue status --verbose --since 7d --limit 20 --offset 20",
    "<%= config.bin %> queue status --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    verbose: Flags.boolean({ char: "v", description: "list the failed history" }),
    since: Flags.string({
      description: "failed-history window: a duration (24h, 7d) or ISO timestamp",
      default: "24h",
    }),
    limit: Flags.integer({ description: "failed jobs to list", default: 50, min: 1, max: 1000 }),
    offset: Flags.integer({ description: "failed jobs to skip", default: 0, min: 0 }),
  };

  async run(): Promise<QueueAnswer> {
    const { flags } = await this.parse(QueueStatus);
    const answer: QueueAnswer = await fromDaemon(this, (client) =>
      client.get<QueueAnswer>("/queue/status", {
        since: flags.since,
        ...(flags.verbose ? { verbose: 1, limit: flags.limit, offset: flags.offset } : {}),
      }),
    );
    if (!this.jsonEnabled()) {
      const { counts, recent } = answer;
      this.log(`active: ${counts.active}`);
      this.log(`waiting: ${counts.waiting}`);
      this.log(`delayed: ${counts.delayed}`);
      if (counts.failed > 0 || recent.failed > 0) {
        this.log(`failed: ${recent.failed} in the last ${recent.hours}h, ${counts.failed} on the queue`);
      }
      for (const breaker of answer.breakers ?? []) {
        this.log(
          `breaker open: ${breaker.pipeline} until ${breaker.openUntil} (new invocations wait; svc queue resume ${breaker.pipeline})`,
        );
      }
      if (flags.verbose) {
        const failed = answer.details?.failed ?? [];
        this.log(failed.length ? "\nfailed history:" : "\nno failed jobs in the window");
        for (const job of failed) {
          this.log(
            `  ${job.changedAt}  ${job.task} ${job.lane}  pipeline ${job.pipeline ?? "-"}  trigger ${job.trigger ?? "-"}  ` +
              `attempts ${job.attempts}/${job.maxAttempts}${job.workspace ? `  ${job.workspace}` : ""}`,
          );
        }
      }
    }
    return answer;
  }
}
