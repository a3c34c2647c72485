import { Command } from "@oclif/core";
import { formatProblems } from "../../shared/config/format.ts";
import { type ProblemJson, problemJson } from "../../shared/config/json.ts";
import { configDirOf, dirFlag } from "../config-dir-flag.ts";
import { DOCTOR_CHECKS, doctorContext, runDoctor } from "../doctor/checks.ts";

export interface DoctorJson {
  ok: boolean;
  dir: string;
  checks: { name: string; status: string; detail: string }[];
  problems: ProblemJson[];
}

export default class Doctor extends Command {
  static override summary = "Check the configuration and the environment the daemon needs";
  static override description =
    "Lists every configuration error (as `svc config validate` does) and checks what can be checked without a " +
    "running daemon: the configuration directory exists, the instance key exists when daemon.yaml uses " +
    "secret_ref, the database named by SVC_DATABASE_URL answers and is PostgreSQL 15 or later, and each agent CLI " +
    "of a claude-code or codex target runs, with its version compared to the pin in deploy/images/agent/versions.json " +
    "(another version is a warning). Each repository of `repos:` is read with `git ls-remote` as a run's checkout " +
    "fetches it (the default code-host identity, else anonymously; a refusal is an error), and this host's " +
    "repository cache (workspaces/.repos) is measured against workspaces.repo_cache.max_size. Exits 1 " +
    "when any check fails. `--json` prints one JSON document, also on failure.";
  static override examples = [
    "<%= config.bin %> doctor",
    "<%= config.bin %> doctor --dir /etc/svc",
    "SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> doctor --json",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
  };

  async run(): Promise<DoctorJson> {
    const { flags } = await this.parse(Doctor);
    const dir = configDirOf(flags.dir);
    const report = await runDoctor(DOCTOR_CHECKS, doctorContext(dir, process.env));
    if (!report.ok) process.exitCode = 1;
    if (!this.jsonEnabled()) {
      for (const check of report.checks)
        this.log(`${check.status.padEnd(8)} ${check.name.padEnd(14)} ${check.detail}`);
      if (report.problems.length > 0) this.log(`\n${formatProblems(report.problems)}`);
      this.log(
        report.ok
          ? "\ndoctor: no problems that stop the daemon"
          : "\ndoctor: fix the errors above, then run svc doctor again",
      );
    }
    return { ok: report.ok, dir, checks: report.checks, problems: report.problems.map(problemJson) };
  }
}
