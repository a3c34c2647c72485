import { Args, Command } from "@oclif/core";
import { connectDaemon, DaemonError, DaemonUnreachableError } from "../../client.ts";
import type { NoteView } from "./list.ts";

export default class NotesShow extends Command {
  static override summary = "Show one note";
  static override description =
    "Prints one note (GET /notes/:id): its title, where it came from (pipeline, agent, repo, invocation), " +
    "its tags and its body. Needs `workloads:read`.";
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
    let answer: { note: NoteView };
    try {
      const client = await connectDaemon();
      answer = await client.get(`/notes/${encodeURIComponent(args.id)}`);
    } catch (error) {
      if (error instanceof DaemonError || error instanceof DaemonUnreachableError)
        this.error(error.message, { exit: 1 });
      throw error;
    }
    if (!this.jsonEnabled()) {
      const { note } = answer;
      this.log(`${note.id}  ${note.title ?? "(untitled)"}`);
      this.log(
        `created ${note.createdAt}  pipeline ${note.pipeline ?? "-"}  agent ${note.agent ?? "-"}  repo ${note.repo ?? "-"}  invocation ${note.invocation ?? "-"}`,
      );
      if (note.tags.length) this.log(`tags: ${note.tags.join(", ")}`);
      this.log("");
      this.log(note.body);
    }
    return answer;
  }
}
