import { Args, Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";
import type { NoteView } from "./list.ts";

export default class NotesShow extends Command {
  static override summary = "Show one note";
  static override description =
    "Prints one note (GET /notes/:id): its title, where it came from (pipeline, agent, repo, invocation), " +
    "its tags and its body. An untrusted note (of a run on an outsider's pull request) says so; `svc notes " +
    "trust <id>` gives it to later runs. Needs `workloads:read`.";
  static override examples = [
    "<%= config.bin %> notes show not_abcdefghijklmnopqrst",
    "<%= config.bin %> notes show not_abcdefghijklmnopqrst --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.string({ description: "the note id (not_…)", required: true }),
  };

  async run(): Promise<{ note: NoteView }> {
    const { args } = await this.parse(NotesShow);
    const answer: { note: NoteView } = await fromDaemon(this, (client) =>
      client.get(`/notes/${encodeURIComponent(args.id)}`),
    );
    if (!this.jsonEnabled()) {
      const { note } = answer;
      this.log(`${note.id}  ${note.title ?? "(untitled)"}`);
      this.log(
        `created ${note.createdAt}  pipeline ${note.pipeline ?? "-"}  agent ${note.agent ?? "-"}  repo ${note.repo ?? "-"}  invocation ${note.invocation ?? "-"}`,
      );
      if (note.tags.length) this.log(`tags: ${note.tags.join(", ")}`);
      if (!note.trusted)
        this.log(
          `UNTRUSTED: written by a run on an outsider's event; no other run is given it until \`svc notes trust ${note.id}\``,
        );
      this.log("");
      this.log(note.body);
    }
    return answer;
  }
}
