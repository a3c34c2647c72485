import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import type { NoteView } from "./list.ts";

export default class NotesTrust extends Command {
  static override summary = "Trust an outsider's note, so later runs are given it";
  static override description =
    "A note submitted by a run whose event came from outside the repository's team (a pull request from a " +
    "fork, or an author who is not an OWNER, MEMBER or COLLABORATOR) is stored untrusted: no other run " +
    "finds or reads it. Read it first (`svc notes show <id>`; `svc notes list --untrusted` lists them), then " +
    'trust it here (PATCH /notes/:id with {"trusted": true}). Needs `workloads:admin`.';
  static override examples = [
    "<%= config.bin %> notes list --untrusted",
    "<%= config.bin %> notes show not_abcdefghijklmnopqrst",
    "<%= config.bin %> notes trust not_abcdefghijklmnopqrst",
    "<%= config.bin %> notes trust not_abcdefghijklmnopqrst --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.string({ description: "the note id (not_…)", required: true }),
  };

  async run(): Promise<{ note: NoteView }> {
    const { args } = await this.parse(NotesTrust);
    const answer: { note: NoteView } = await fromDaemon(this, (client) =>
      client.request("PATCH", `/notes/${encodeURIComponent(args.id)}`, { trusted: true }),
    );
    if (!this.jsonEnabled())
      this.log(
        `trusted ${answer.note.id}  ${answer.note.title ?? "(untitled)"}: later runs of ${answer.note.repo ?? "every repository"} are given it`,
      );
    return answer;
  }
}
