import { Command, Flags } from "@oclif/core";
import { issueToken } from "../../../db/api_tokens.ts";
import { createPool, redactUrl, resolveDatabase } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";

export interface IssueJson {
  id: string;
  name: string;
  scopes: string[];
  token: string;
}

export default class TokenIssue extends Command {
  static override summary = "Issue a daemon API token carrying `*`";
  static override description =
    "Creates a token with the scope `*` in the daemon's database (found like the daemon finds it: " +
    "SVC_DATABASE_URL, else the embedded Postgres under <config dir>/data/postgres), stores only its SHA-256 " +
    "hash, and prints the token once: it cannot be shown again. Run it on the daemon's host. The daemon " +
    "accepts the token at once, no restart needed; `svc auth setup` saves it for the CLI.";
  static override examples = [
    "<%= config.bin %> token issue",
    "<%= config.bin %> token issue --name ci",
    "<%= config.bin %> token issue --name laptop --json | jq -r .token | <%= config.bin %> auth setup",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    name: Flags.string({ description: "a label for the token (who or what uses it)", default: "operator" }),
    dir: dirFlag,
  };

  async run(): Promise<IssueJson> {
    const { flags } = await this.parse(TokenIssue);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(flags.name)) {
      this.error("--name must be 1-64 letters, digits, dots, dashes or underscores", { exit: 2 });
    }
    const configDir = configDirOf(flags.dir);
    const database = await resolveDatabase(configDir, process.env).catch((error: Error) =>
      this.error(`cannot start the embedded Postgres: ${error.message}`, { exit: 1 }),
    );
    const pool = createPool(database.url, { max: 1, applicationName: "svc-token-issue" });
    let issued: IssueJson;
    try {
      await migrate(pool);
      issued = await issueToken(pool, { name: flags.name, scopes: ["*"] });
    } catch (error) {
      this.error(
        `cannot issue a token in the database at ${redactUrl(database.url)}: ${(error as Error).message}`,
        { exit: 1 },
      );
    } finally {
      await pool.end().catch(() => {});
    }
    if (!this.jsonEnabled()) {
      this.logToStderr(`issued ${issued.id} (name ${issued.name}, scopes *); it is shown only this once:`);
      this.log(issued.token);
      this.logToStderr("save it for the CLI with: svc auth setup   (paste it, or pipe it in)");
    }
    return issued;
  }
}
