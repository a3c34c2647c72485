import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface ResumeAnswer {
  pipeline: string;
  breaker: "closed";
  wasOpen: boolean;
}

export default class QueueResume extends Command {
  static override summary = "Close a pipeline's open circuit breaker early";
  static override description =
    "After `queue.circuit_breaker.failures` consecutive failed invocations, a pipeline's new invocations wait " +
    "for `cooldown`. This closes the breaker now (POST /admin/resume with { pipeline }): the waiting " +
    "invocations run within seconds and the failure count starts again. `svc queue status` lists open " +
    "breakers. Needs `admin`.";
  static override examples = [
    "<%= config.bin %> queue resume pr-review",
    "<%= config.bin %> queue resume nightly-triage --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    pipeline: Args.string({ description: "the pipeline whose breaker to close", required: true }),
  };

  async run(): Promise<ResumeAnswer> {
    const { args } = await this.parse(QueueResume);
    const answer: ResumeAnswer = await fromDaemon(this, (client) =>
      client.post<ResumeAnswer>("/admin/resume", { pipeline: args.pipeline }),
    );
    if (!this.jsonEnabled()) {
      this.log(
        answer.wasOpen
          ? `breaker of ${answer.pipeline} closed: its waiting invocations run now`
          : `breaker of ${answer.pipeline} was not open: nothing waits on it`,
      );
    }
    return answer;
  }
}
