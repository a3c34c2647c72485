import { styleText } from "node:util";
import { Command, Flags } from "@oclif/core";
import { formatProblems } from "../../shared/config/format.ts";
import { type ProblemJson, problemJson } from "../../shared/config/json.ts";
import { openKeyProber } from "../../worker/gateway/probe.ts";
import { configDirOf, dirFlag } from "../config-dir-flag.ts";
import { DOCTOR_CHECKS, doctorContext, runDoctor } from "../doctor/checks.ts";
import { DEEP_CHECKS } from "../doctor/deep.ts";
import { type FireReport, fireLines, fireOk, fireRehearsal, parsePullReference } from "../doctor/fire.ts";
import { fromDaemon } from "../from-daemon.ts";

export interface DoctorJson {
  ok: boolean;
  dir: string;
  checks: { name: string; status: string; detail: string }[];
  problems: ProblemJson[];
  /** `--fire`: the rehearsal's trigger, its runs and what each would have posted */
  fire?: FireReport;
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
    "when any check fails. `--json` prints one JSON document, also on failure. `--deep` then proves the chain " +
    "a first pull request travels, one line per link: the GitHub App of codehost.app is installed on each " +
    "repository of `repos:` with the permissions (contents read, pull_requests write, issues write, checks read, " +
    "metadata read) and events (pull_request, issue_comment, pull_request_review_comment, push) svc needs; " +
    "GitHub's last delivery to the App's webhook got a 2xx answer and svc holds its trigger (read from " +
    "SVC_DATABASE_URL, else from the daemon); the sandbox engine answers and has the images sandboxed pipelines " +
    "run in; each credential of an openai, claude-code or codex target is accepted by its model API (one " +
    "one-token request through svc's model gateway); and each agent CLI a sandboxed pipeline runs starts in " +
    "its image. A link this machine cannot check says so. `--deep --fire <owner>/<repo>#<number>` then asks the " +
    "daemon (SVC_DAEMON_URL, a token with pipelines:invoke and triggers:read) to replay that open pull request's " +
    "synchronize through the pipelines it fires, built from GitHub's answer, with outputs held back: nothing is " +
    "posted, no live review is cancelled, and doctor prints, per pipeline, how its run ended and the review it " +
    "would have posted (the run's held/outputs.md artifact). Exits 1 when a run did not complete.";
  static override examples = [
    "<%= config.bin %> doctor",
    "<%= config.bin %> doctor --dir /etc/svc",
    "SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> doctor --json",
    "<%= config.bin %> doctor --deep",
    "<%= config.bin %> doctor --deep --fire acme/api#42",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    dir: dirFlag,
    deep: Flags.boolean({
      description:
        "also check the chain to the first pull request: the App's installations, the webhook's last delivery, the sandbox engine and images, the targets' keys, the agent CLIs in their images",
      default: false,
    }),
    fire: Flags.string({
      description:
        "after the deep checks (--fire implies --deep), replay this open pull request's synchronize with outputs held back and show the review it would post",
      helpValue: "<owner>/<repo>#<number>",
    }),
    // no dependsOn: oclif applies a default before it checks, and would ask for --fire on every run
    "fire-timeout": Flags.integer({
      description: "with --fire: seconds to wait for the rehearsal's runs to finish",
      default: 900,
      min: 1,
    }),
  };

  async run(): Promise<DoctorJson> {
    const { flags } = await this.parse(Doctor);
    const pull = flags.fire === undefined ? undefined : parsePullReference(flags.fire);
    if (typeof pull === "string") this.error(pull, { exit: 2 });
    const dir = configDirOf(flags.dir);
    const deep = flags.deep || pull !== undefined;
    const checks = deep ? [...DOCTOR_CHECKS, ...DEEP_CHECKS] : DOCTOR_CHECKS;
    const context = doctorContext(dir, process.env);
    // the command is where roles are wired, as `svc worker` wires the worker: checks import none
    const report = await runDoctor(checks, deep ? { ...context, keyProber: openKeyProber } : context);
    if (!report.ok) process.exitCode = 1;
    if (!this.jsonEnabled()) {
      for (const check of report.checks)
        this.log(`${statusWord(check.status)} ${check.name.padEnd(14)} ${check.detail}`);
      if (report.problems.length > 0) this.log(`\n${formatProblems(report.problems)}`);
      this.log(
        report.ok
          ? "\ndoctor: no problems that stop the daemon"
          : "\ndoctor: fix the errors above, then run svc doctor again",
      );
    }
    const answer: DoctorJson = {
      ok: report.ok,
      dir,
      checks: report.checks,
      problems: report.problems.map(problemJson),
    };
    if (!pull) return answer;
    if (!this.jsonEnabled()) this.log("");
    const fire = await fromDaemon(this, (client) =>
      fireRehearsal(client, pull, {
        log: (line) => {
          if (!this.jsonEnabled()) this.log(line);
        },
        timeoutMs: flags["fire-timeout"] * 1000,
      }),
    );
    if (!this.jsonEnabled()) for (const line of fireLines(pull, fire)) this.log(line);
    if (!fireOk(fire)) process.exitCode = 1;
    return { ...answer, ok: answer.ok && fireOk(fire), fire };
  }
}

const COLORS = { ok: "green", warning: "yellow", error: "red", skipped: "dim" } as const;

/** The status, padded; green, yellow, red or dim on a terminal that takes colour (NO_COLOR and pipes get none). */
function statusWord(status: string): string {
  const color = COLORS[status as keyof typeof COLORS];
  const word = status.padEnd(8);
  return color ? styleText(color, word) : word;
}
