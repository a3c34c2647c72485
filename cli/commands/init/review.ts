import { readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { Command, Flags } from "@oclif/core";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { envVariables } from "../../daemon-yaml.ts";
import { existingFiles, validateWritten, writeTemplate } from "../../init/files.ts";
import {
  CREDENTIAL_SOURCES,
  type CredentialSource,
  DAEMON_FILE,
  missingTargetBlock,
  REPO_NAME,
  REVIEW_AGENTS,
  reviewFiles,
  storedCredentialRef,
  VARIABLES,
} from "../../init/review.ts";

const AGENTS = Object.keys(REVIEW_AGENTS);

export default class InitReview extends Command {
  static override summary =
    "A pull request review pipeline for Claude Code or Codex: sandboxed, incremental, one sticky progress comment";
  static override description =
    "Writes pipelines/pr-review.yaml and agents/reviewer/PERSONA.md into the configuration directory, and " +
    "daemon.yaml when there is none: a GitHub webhook source whose secret is read from GITHUB_WEBHOOK_SECRET, " +
    "the code-host token from GITHUB_TOKEN, the agent's target with its API key from ANTHROPIC_API_KEY " +
    "(claude-code) or OPENAI_API_KEY (codex), and the sandbox settings. With --credential stored the targets " +
    "name the API key stored in the database instead, `secret_ref: target/<target>/<credential>` " +
    "(target/claude/anthropic, target/codex/openai), which `svc secret set` stores (prompted, never echoed). The pipeline reviews each pull request " +
    "in a container with no network but the model, keeps one comment per pull request that says it is running " +
    "and then holds the review, cancels the review of a head a newer push superseded, reviews only what changed " +
    "since its last review (PREVIOUS_SHA) against the pull request's base (BASE_SHA), and reviews pull requests " +
    'of owners, members and collaborators only (not forks) unless a member asks with "@svc review".\n\n' +
    "Nothing that exists is overwritten: each such file is named and nothing is written, unless --force, which " +
    "rewrites the pipeline and the persona. An existing daemon.yaml is never rewritten, not even with --force: " +
    "when it lacks the agent's target, the block to add is printed. The result is then checked with the loader " +
    "of `svc config validate` (variables not set in this shell are given stand-in values and listed), and the " +
    "next steps say which variables to set and what to run.";
  static override examples = [
    "<%= config.bin %> init review --agent claude-code",
    "<%= config.bin %> init review --agent codex --repo acme/widgets --repo acme/gadgets",
    {
      description: "The API key stored in the database (svc secret set), not read from the environment:",
      command: "<%= config.bin %> init review --agent claude-code --credential stored",
    },
    {
      description: "Into another configuration directory, replacing the pipeline written before:",
      command: "<%= config.bin %> init review --agent claude-code --dir /etc/svc/config --force",
    },
  ];
  static override flags = {
    agent: Flags.string({
      description: "the coding agent that reviews: claude-code (Claude Code) or codex (Codex)",
      helpValue: "<claude-code|codex>",
      required: true,
    }),
    repo: Flags.string({
      description: "a repository to review, written under repos: of a new daemon.yaml (repeatable)",
      helpValue: "<owner/name>",
      multiple: true,
      multipleNonGreedy: true,
    }),
    credential: Flags.string({
      description:
        "where the targets read the model API key: env (the variable ANTHROPIC_API_KEY or OPENAI_API_KEY) or stored (secret_ref: target/<target>/<credential>, stored with svc secret set)",
      options: [...CREDENTIAL_SOURCES],
      default: "env",
    }),
    force: Flags.boolean({
      description: "overwrite the pipeline and persona files that exist (never daemon.yaml)",
      default: false,
    }),
    dir: dirFlag,
  };

  /** The message as written (oclif's error() rewraps it), then exit 1. */
  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(InitReview);
    const agentName = flags.agent;
    const agent = REVIEW_AGENTS[agentName];
    if (!agent)
      this.fail(`unknown agent "${agentName}": --agent takes ${AGENTS.join(" or ")}; nothing was written`);
    const repos = flags.repo ?? [];
    for (const repo of repos) {
      if (!REPO_NAME.test(repo))
        this.fail(`--repo "${repo}" is not a repository: write <owner>/<name>, e.g. acme/widgets`);
    }
    const dir = configDirOf(flags.dir);
    const shown = (path: string) => {
      const rel = relative(process.cwd(), join(dir, path));
      return rel.startsWith("..") ? join(dir, path) : rel;
    };

    const credential = flags.credential as CredentialSource;
    const files = await reviewFiles(agentName, repos, credential);
    const existing = await existingFiles(dir, files);
    if (existing.length > 0 && !flags.force)
      this.fail(
        [
          `svc init review: ${existing.length === 1 ? "this file exists" : "these files exist"}, and nothing was written:`,
          ...existing.map((path) => `  ${shown(path)}`),
          "Run again with --force to overwrite them (daemon.yaml is never overwritten), or move them away.",
        ].join("\n"),
      );

    const outcome = await writeTemplate(dir, files, flags.force);
    for (const { path, overwritten } of outcome.written)
      this.log(`${overwritten ? "overwrote" : "wrote"} ${shown(path)}`);
    const daemonWritten = outcome.written.some((file) => file.path === DAEMON_FILE);
    const templateDaemon = files.find((file) => file.path === DAEMON_FILE)!.content;
    let missingBlock: string | undefined;
    let keptVariables: string[] = [];
    if (!daemonWritten) {
      this.log(`kept ${shown(DAEMON_FILE)} as it is (it exists)`);
      if (repos.length > 0)
        this.log(
          `  --repo is not applied to an existing daemon.yaml: add ${repos.join(", ")} under repos: yourself`,
        );
      const existingDaemon = await readFile(join(dir, DAEMON_FILE), "utf8").catch(() => "");
      missingBlock = missingTargetBlock(existingDaemon, templateDaemon, agent.target);
      if (credential === "stored" && missingBlock === undefined)
        this.log(
          `  --credential stored is not applied to an existing daemon.yaml: write "secret_ref: ${storedCredentialRef(agent)}" on targets.${agent.target}'s credential yourself`,
        );
      // the kept file's own variables count when they are unset here, as the written files' always do
      keptVariables = envVariables(existingDaemon).filter((name) => !process.env[name]);
    }

    const writtenText = outcome.written.map(({ path }) => files.find((file) => file.path === path)!.content);
    const variables = [
      ...new Set([
        ...envVariables(writtenText.join("\n")),
        ...keptVariables,
        ...envVariables(missingBlock ?? ""),
      ]),
    ];
    const validation = await validateWritten(dir, variables);
    this.log(`\nvalidation (as svc config validate):\n${indent(validation.report)}`);
    const { standIns } = validation;
    if (standIns.length > 0)
      this.log(
        `  ${standIns.join(", ")} ${standIns.length === 1 ? "is" : "are"} not set here: checked with stand-in ` +
          `values (svc config validate reports ${standIns.length === 1 ? "it" : "each"} until set)`,
      );
    if (missingBlock !== undefined)
      this.log(
        `\n${shown(DAEMON_FILE)} has no target "${agent.target}", which the pipeline runs on. Add it under targets: (${credential === "stored" ? "and store its key: see the next steps" : "and its variable to the environment"}):\n${indent(missingBlock)}`,
      );

    this.log(
      `\nNext steps:\n${nextSteps({
        variables,
        daemonWritten,
        repos,
        dirFlag: flags.dir,
        // the stored key is named by what was written: the new daemon.yaml or the block to add
        storedKey:
          credential === "stored" && (daemonWritten || missingBlock !== undefined)
            ? storedCredentialRef(agent)
            : undefined,
      }).join("\n")}`,
    );
    if (!validation.ok) process.exitCode = 1;
  }
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => (line ? `  ${line}` : line))
    .join("\n");
}

interface StepsInput {
  variables: string[];
  daemonWritten: boolean;
  repos: string[];
  dirFlag: string | undefined;
  /** the stored secret the targets' secret_ref names (--credential stored) */
  storedKey: string | undefined;
}

function nextSteps({ variables, daemonWritten, repos, dirFlag, storedKey }: StepsInput): string[] {
  const dirArg = dirFlag ? ` --dir ${dirFlag}` : "";
  const steps: string[][] = [];
  if (storedKey !== undefined)
    steps.push([
      "Store the model API key in the database, encrypted with the instance key (make that key first, once:",
      `     svc setup instance-key${dirArg}); the key is prompted for and never echoed:`,
      `       svc secret set ${storedKey}${dirArg}`,
    ]);
  if (variables.length > 0) {
    const width = Math.max(...variables.map((name) => name.length));
    steps.push([
      "Set these variables in the daemon's environment (svc config validate names each one unset):",
      ...variables.map(
        (name) =>
          `       ${name.padEnd(width)}  ${VARIABLES[name] ?? "read by daemon.yaml"}${process.env[name] ? "" : " (unset here)"}`,
      ),
    ]);
  }
  if (daemonWritten) {
    if (repos.length === 0)
      steps.push([
        "Name the repositories to review under repos: in daemon.yaml (acme/widgets: {}), or run again with --repo.",
      ]);
    steps.push([
      "Get the sandbox image agent:default on each worker host: set sandboxes.registry in daemon.yaml, then",
      `     svc image pull${dirArg} (or build it: docs/operations.md, "Images").`,
    ]);
  }
  steps.push([`Check it all: svc config validate${dirArg} && svc doctor${dirArg}`]);
  steps.push([
    daemonWritten
      ? `Start the daemon: svc daemon start${dirArg} (or svc dev${dirArg} in the foreground)`
      : `Restart the daemon, which reads its configuration only at start: svc daemon restart${dirArg}`,
  ]);
  if (daemonWritten)
    steps.push([
      "Make svc's GitHub App with one button: set server.public_url in daemon.yaml to the address GitHub",
      `     reaches (a reverse proxy before 127.0.0.1:7420), make the key its secrets are sealed with once`,
      `     (svc setup instance-key${dirArg}), then svc setup github --force${dirArg}, install the App`,
      `     on the repository, and svc daemon restart${dirArg}. Without an App: svc setup webhook github --secret-env`,
      "     GITHUB_WEBHOOK_SECRET prints the webhook to add by hand (events Pull requests and Issue comments).",
    ]);
  steps.push([
    `Prove the path: svc doctor --deep${dirArg}, then, on an open pull request, svc doctor --deep --fire`,
    `     ${repos[0] ?? "<owner>/<repo>"}#<number>${dirArg} shows the review svc would post, posting nothing.`,
  ]);
  return steps.flatMap(([first, ...rest], index) => [`  ${index + 1}. ${first}`, ...rest]);
}
