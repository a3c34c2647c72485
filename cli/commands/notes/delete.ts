import { Args, Command } from "@oclif/core";
import { createPool, redactUrl, resolveDatabase } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { deleteNote } from "../../../db/notes.ts";
import { configDirFrom } from "../../../shared/config/dir.ts";
import { isIdOf } from "../../../shared/ids.ts";

export default class NotesDelete extends Command {
  static override summary = "Delete a note, or lift a dismissal";
  static override description =
    "Deletes the note <id> from the database. A dismissal (svc notes list --kind dismissal) is a finding a " +
    "member dismissed; deleting it lets later reviews raise that finding again (its thread is not judged a " +
    "second time). Writes to the database named by SVC_DATABASE_URL (or the embedded one of the configuration directory).";
  static override examples = ["<%= config.bin %> notes delete not_01j9zq4m5e8x2c7v3b6n1k0a9d"];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.string({ description: "the note's id (not_…)", required: true }),
  };

  async run(): Promise<{ deleted: string }> {
    const { args } = await this.parse(NotesDelete);
    if (!isIdOf("note", args.id))
      this.error(`${args.id} is not a note id - give the not_… id svc notes list shows`, { exit: 1 });
    const database = await resolveDatabase(configDirFrom(process.env), process.env);
    const pool = createPool(database.url, { max: 1, applicationName: "svc-notes-delete" });
    let deleted = false;
    try {
      await migrate(pool);
      deleted = await deleteNote(pool, args.id);
    } catch (error) {
      this.error(`cannot delete in the database at ${redactUrl(database.url)}: ${(error as Error).message}`, {
        exit: 1,
      });
    } finally {
      await pool.end();
    }
    if (!deleted) this.error(`no note ${args.id} - svc notes list shows the notes there are`, { exit: 1 });
    if (!this.jsonEnabled()) this.log(`deleted ${args.id}`);
    return { deleted: args.id };
  }
}
