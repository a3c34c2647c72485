import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

export default class ScheduleRun extends Command {
  static override summary = "Fire a schedule now";
  static override description =
    "Fires the named schedule at once with its configured args (POST /schedules/:name/run): a trigger of kind " +
    "`schedule` whose payload's `scheduled_for` is now, run like any tick. The schedule's own ticks are not " +
    "moved. Prints the trigger id (follow it with `svc trace`). Names are listed by `svc schedule list`. " +
    "Needs `pipelines:invoke`.";
  static override examples = [
    "<%= config.bin %> schedule run nightly-triage",
    "<%= config.bin %> schedule run nightly-triage-2 --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: Args.string({ description: "the schedule's name (see `svc schedule list`)", required: true }),
  };

  async run(): Promise<{ trigger: string }> {
    const { args } = await this.parse(ScheduleRun);
    const answer: { trigger: string } = await fromDaemon(
      this,
      (client) => client.post<{ trigger: string }>(`/schedules/${encodeURIComponent(args.name)}/run`, {}),
      (error) => {
        if (error.status === 404)
          this.error(`no schedule named "${args.name}" - \`svc schedule list\` shows the configured ones`, {
            exit: 1,
          });
      },
    );
    if (!this.jsonEnabled()) this.log(answer.trigger);
    return answer;
  }
}
