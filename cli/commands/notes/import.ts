import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { Args, Command } from "@oclif/core";
import { createPool, redactUrl, resolveDatabase } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { configDirFrom } from "../../../shared/config/dir.ts";
import { type ImportSummary, importNotes } from "../../notes-import.ts";

export default class NotesImport extends Command {
  static override summary = "Import legacy notes files into the database";
  static override description =
    "Reads every Markdown file under <dir> (recursively; optional frontmatter with title, tags, pipeline, " +
    "agent, repo, date) and stores each as a note in the database. Importing is idempotent: a file whose " +
    "content was imported before is skipped, so a second run imports 0. Source files are left in place. " +
    "Writes to the database named by SVC_DATABASE_URL (or the embedded one of the configuration directory).";
  static override examples = [
    "<%= config.bin %> notes import .svc/notes",
    "SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> notes import ./old-notes --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    dir: Args.string({ description: "directory holding the notes files", required: true }),
  };

  async run(): Promise<ImportSummary> {
    const { args } = await this.parse(NotesImport);
    const dir = resolve(args.dir);
    const isDir = await stat(dir).then(
      (info) => info.isDirectory(),
      () => false,
    );
    if (!isDir)
      this.error(`${args.dir} is not a directory - give the directory holding the notes files`, { exit: 1 });
    const database = await resolveDatabase(configDirFrom(process.env), process.env);
    const pool = createPool(database.url, { max: 1, applicationName: "svc-notes-import" });
    let summary: ImportSummary;
    try {
      await migrate(pool);
      summary = await importNotes(pool, dir, (line) => {
        if (!this.jsonEnabled()) this.log(line);
      });
    } catch (error) {
      this.error(
        `cannot import into the database at ${redactUrl(database.url)}: ${(error as Error).message}`,
        {
          exit: 1,
        },
      );
    } finally {
      await pool.end();
    }
    if (!this.jsonEnabled())
      this.log(
        `imported ${summary.imported}, skipped ${summary.skipped} (already imported)${summary.failed.length ? `, failed ${summary.failed.length}` : ""}`,
      );
    if (summary.failed.length) process.exitCode = 1;
    return summary;
  }
}
