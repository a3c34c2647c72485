import { Command, Flags } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

export interface NoteView {
  id: string;
  title: string | null;
  body: string;
  tags: string[];
  pipeline: string | null;
  agent: string | null;
  repo: string | null;
  invocation: string | null;
  /** false for a note of an outsider's run until `svc notes trust` */
  trusted: boolean;
  createdAt: string;
}

export default class NotesList extends Command {
  static override summary = "List notes, newest first";
  static override description =
    "Lists the notes agents kept (the submit_note tool) and imported notes (GET /notes). Filter by pipeline, " +
    "agent, repo, tag, or words that must all appear. Needs `workloads:read`; notes are not owner-bound, so " +
    "every note is listed whoever's run wrote it. Untrusted notes (of runs on an outsider's pull request, given " +
    "to no other run until `svc notes trust <id>`) are left out unless --untrusted adds them, marked UNTRUSTED.";
  static override examples = [
    "<%= config.bin %> notes list",
    "<%= config.bin %> notes list --pipeline pr-review --tag flaky",
    '<%= config.bin %> notes list --query "deploy rollback" --json',
    "<%= config.bin %> notes list --untrusted",
    "<%= config.bin %> notes list --kind dismissal --repo acme/widgets",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    pipeline: Flags.string({ description: "only notes of this pipeline", helpValue: "<name>" }),
    agent: Flags.string({ description: "only notes of this agent", helpValue: "<name>" }),
    repo: Flags.string({ description: "only notes about this repository", helpValue: "<owner/name>" }),
    tag: Flags.string({ description: "only notes with this tag", helpValue: "<tag>" }),
    kind: Flags.string({
      description:
        "only notes of this kind: dismissal lists the findings members dismissed, which reviews drop (svc notes delete <id> lifts one)",
      options: ["dismissal"],
      exclusive: ["tag"],
    }),
    query: Flags.string({ char: "q", description: "words that must all appear", helpValue: "<words>" }),
    limit: Flags.integer({ description: "at most this many", default: 50, min: 1, max: 500 }),
    untrusted: Flags.boolean({
      description: "also list untrusted notes (outsiders' runs), marked UNTRUSTED",
      default: false,
    }),
  };

  async run(): Promise<{ notes: NoteView[] }> {
    const { flags } = await this.parse(NotesList);
    const answer: { notes: NoteView[] } = await fromDaemon(this, (client) =>
      client.get("/notes", {
        pipeline: flags.pipeline,
        agent: flags.agent,
        repo: flags.repo,
        // a dismissal note carries the tag `dismissal` (worker/outputs/dismissals.ts): the API filters on it
        tag: flags.kind ?? flags.tag,
        q: flags.query,
        limit: flags.limit,
        untrusted: flags.untrusted ? 1 : undefined,
      }),
    );
    if (!this.jsonEnabled()) {
      if (!answer.notes.length) this.log("no notes match");
      for (const note of answer.notes) {
        const tags = note.tags.length ? `[${note.tags.join(", ")}]` : "-";
        this.log(
          [
            note.id,
            note.createdAt,
            note.pipeline ?? "-",
            tags,
            ...(note.trusted ? [] : ["UNTRUSTED"]),
            note.title ?? "(untitled)",
          ].join("  "),
        );
      }
    }
    return answer;
  }
}
