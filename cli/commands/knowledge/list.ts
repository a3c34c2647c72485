import { Command } from "@oclif/core";
import { fromDaemon } from "../../from-daemon.ts";

interface ListAnswer {
  engine: string;
  indexed_at: string | null;
  documents: { path: string; title: string; size: number; indexed_at: string | null }[];
}

export default class KnowledgeList extends Command {
  static override summary = "List the knowledge documents the daemon indexed";
  static override description =
    "Asks the running daemon (GET /knowledge at SVC_DAEMON_URL) for the documents under .svc/knowledge/: path, " +
    "title (first heading), size and when the index was built. Needs `knowledge:read`.";
  static override examples = ["<%= config.bin %> knowledge list", "<%= config.bin %> knowledge list --json"];
  static override enableJsonFlag = true;

  async run(): Promise<ListAnswer> {
    await this.parse(KnowledgeList);
    const answer: ListAnswer = await fromDaemon(this, (client) => client.get<ListAnswer>("/knowledge"));
    if (!this.jsonEnabled()) {
      if (answer.documents.length === 0)
        this.log("no knowledge documents (add Markdown files under .svc/knowledge/)");
      for (const doc of answer.documents)
        this.log(`${doc.path.padEnd(40)} ${String(doc.size).padStart(8)} B  ${doc.title}`);
      if (answer.documents.length > 0)
        this.log(
          `\n${answer.documents.length} documents, ${answer.engine} engine, indexed ${answer.indexed_at ?? "never"}`,
        );
    }
    return answer;
  }
}
