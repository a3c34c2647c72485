import { Command } from "@oclif/core";
import { formatProblems } from "../../../shared/config/format.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { Knowledge } from "../../../shared/knowledge/service.ts";
import { createLogger } from "../../../shared/logger.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";

export default class KnowledgeReindex extends Command {
  static override summary = "Rebuild the knowledge index now";
  static override description =
    "Rebuilds the index of the documents under <config dir>/knowledge/ in <config dir>/data/knowledge/ on this " +
    "host (qmd; with engine: vector also the Chroma collection, embedding every passage with the host embedder " +
    "runner), printing progress. The daemon rebuilds by itself at start when the sources changed; running " +
    "daemons switch to the new index at their next search. Exits 1 when qmd is missing or older than 2.8.3, or " +
    "the embedder cannot start.";
  static override examples = [
    "<%= config.bin %> knowledge reindex",
    "<%= config.bin %> knowledge reindex --dir /etc/svc",
  ];
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(KnowledgeReindex);
    const dir = configDirOf(flags.dir);
    const loaded = await loadConfig({ dir, env: process.env });
    if (!loaded.ok) this.error(formatProblems(loaded.problems), { exit: 1 });
    // progress goes to the terminal; the structured lines would repeat it
    const logger = createLogger({ role: "cli", level: "error" });
    try {
      const knowledge = await Knowledge.open(loaded.config, logger, {
        force: true,
        progress: (line) => this.log(line),
      });
      if (knowledge.documentCount === 0) this.log(`no documents under ${dir}/knowledge/: nothing to index`);
    } catch (error) {
      this.error((error as Error).message, { exit: 1 });
    }
  }
}
