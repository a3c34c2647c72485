import { stat } from "node:fs/promises";
import { Command, Flags } from "@oclif/core";
import {
  applyMigration,
  backupConfig,
  LATEST_CONFIG_RELEASE,
  type MigrationPlan,
  planMigration,
  unifiedDiff,
} from "../../../shared/config/migrate/index.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";

export interface MigrateJson {
  dir: string;
  to: string;
  dryRun: boolean;
  backup: string | null;
  /** with --dry-run: the unified diff the text output prints */
  diff?: string;
  files: { file: string; from?: string }[];
  changes: MigrationPlan["changes"];
  todos: MigrationPlan["todos"];
}

export default class ConfigMigrate extends Command {
  static override summary = "Rewrite a configuration written for an older release into today's shapes";
  static override description =
    'Applies the configuration changes of every release (the release notes\' "Changes by release") to the ' +
    "configuration directory: renamed keys, moved blocks, removed keys, SOUL.md → PERSONA.md, protocols/ → " +
    "policies/. Comments and key order are kept. What cannot be rewritten mechanically gets a " +
    "`# TODO(svc config migrate): …` comment above the key and is listed at the end; `svc config validate` then " +
    "reports only those. A backup of the directory (without data/, workspaces/, run/ and keys) is written next " +
    "to it first. --dry-run prints the unified diff and writes nothing. A second run changes nothing.";
  static override examples = [
    "<%= config.bin %> config migrate --dry-run",
    "<%= config.bin %> config migrate && <%= config.bin %> config validate",
    "<%= config.bin %> config migrate --dir /etc/svc/config --to 0.9.0",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
    "dry-run": Flags.boolean({ description: "print the unified diff of every rewrite and write nothing" }),
    to: Flags.string({
      description: `apply the changes of releases up to this one (default: ${LATEST_CONFIG_RELEASE}, the last release that changed the configuration)`,
      helpValue: "<version>",
    }),
  };

  async run(): Promise<MigrateJson> {
    const { flags } = await this.parse(ConfigMigrate);
    const dir = configDirOf(flags.dir);
    if (!(await stat(dir).catch(() => undefined))?.isDirectory())
      this.error(`${dir} is not a configuration directory - point --dir or SVC_CONFIG_DIR at it`, {
        exit: 1,
      });
    let plan: MigrationPlan;
    try {
      plan = await planMigration({ dir, ...(flags.to ? { to: flags.to } : {}), env: process.env });
    } catch (error) {
      this.error((error as Error).message, { exit: 2 });
    }
    const dryRun = flags["dry-run"];
    const json: MigrateJson = {
      dir,
      to: plan.to,
      dryRun,
      backup: null,
      files: plan.files.map(({ file, from }) => ({ file, ...(from ? { from } : {}) })),
      changes: plan.changes,
      todos: plan.todos,
    };
    const say = (line: string) => {
      if (!this.jsonEnabled()) this.log(line);
    };
    say(`${dryRun ? "would migrate" : "migrating"} ${dir} to the shapes of ${plan.to}`);
    if (plan.files.length === 0) {
      say("nothing to change: the configuration already uses these shapes");
    } else if (dryRun) {
      json.diff = unifiedDiff(plan);
      if (!this.jsonEnabled()) process.stdout.write(json.diff);
    } else {
      json.backup = await backupConfig(dir);
      say(`backup: ${json.backup}`);
      await applyMigration(plan);
    }
    for (const change of plan.changes) say(`  ${change.release.padEnd(6)} ${change.file}: ${change.text}`);
    for (const file of json.files)
      say(`${dryRun ? "would change" : "changed"}: ${file.file}${file.from ? ` (from ${file.from})` : ""}`);
    if (plan.todos.length) {
      say(
        `\n${plan.todos.length} to-do${plan.todos.length === 1 ? "" : "s"} left for you (marked "# TODO(svc config migrate)" in the files):`,
      );
      for (const todo of plan.todos) say(`  ${todo.file}${todo.line ? `:${todo.line}` : ""}: ${todo.text}`);
    }
    if (!dryRun && plan.files.length)
      say("\nnext: svc config validate, then svc doctor and svc daemon restart");
    return json;
  }
}
