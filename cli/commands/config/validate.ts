import { Command } from "@oclif/core";
import { formatProblems, summarizeProblems } from "../../../shared/config/format.ts";
import { type ProblemJson, problemJson } from "../../../shared/config/json.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";

export interface ValidateJson {
  ok: boolean;
  dir: string;
  summary: { pipelines: number; sources: number; targets: number } | null;
  problems: ProblemJson[];
}

export default class ConfigValidate extends Command {
  static override summary = "Validate the configuration directory";
  static override description =
    "Loads daemon.yaml, pipelines/*.yaml, members.yaml, policies/, agents/ and skills/ exactly as the daemon does " +
    "and lists every problem of every file, each with its file, line, key path, code and fix. Exits 0 when the " +
    "configuration is valid (warnings allowed) and 1 otherwise. Run it before `svc daemon restart`: the daemon " +
    "reads its configuration only at start.";
  static override examples = [
    "<%= config.bin %> config validate",
    "<%= config.bin %> config validate --dir ./deploy/.svc",
    "SVC_CONFIG_DIR=/etc/svc <%= config.bin %> config validate --json",
    "<%= config.bin %> config validate && <%= config.bin %> daemon restart",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<ValidateJson> {
    const { flags } = await this.parse(ConfigValidate);
    const dir = configDirOf(flags.dir);
    const result = await loadConfig({ dir, env: process.env });
    const problems = result.problems.map(problemJson);
    if (!result.ok) {
      process.exitCode = 1;
      if (!this.jsonEnabled()) {
        this.log(formatProblems(result.problems));
        this.log(`\nconfiguration invalid: ${summarizeProblems(result.problems)} (${dir})`);
      }
      return { ok: false, dir, summary: null, problems };
    }
    const { config } = result;
    const summary = {
      pipelines: Object.keys(config.pipelines).length,
      sources: Object.keys(config.webhooks.sources).length,
      targets: Object.keys(config.targets).length,
    };
    if (!this.jsonEnabled()) {
      if (result.problems.length > 0) this.log(`${formatProblems(result.problems)}\n`);
      const warnings = result.problems.length
        ? `, ${result.problems.length} warning${result.problems.length === 1 ? "" : "s"}`
        : "";
      this.log(
        `configuration valid: ${plural(summary.pipelines, "pipeline")}, ${plural(summary.sources, "source")}, ${plural(summary.targets, "target")}${warnings} (${dir})`,
      );
    }
    return { ok: true, dir, summary, problems };
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
