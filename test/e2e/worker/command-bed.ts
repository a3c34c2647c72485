// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { postSignedDelivery } from "../outputs/pull-request.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "./processes.ts";

/**
 * A real ingress and worker on a fresh database taking signed GitHub deliveries (pull requests and
 * their comments), with the loopback GitHub fake as the code host svc reacts on. The agent is a
 * `command` target that answers with what its run was given: COMMAND_ARGS (its environment's and
 * its prompt's) and the event name.
 */
const ROOT = join(import.meta.dirname, "../../..");
export const GITHUB_SECRET = "e2e-commands-github-secret";
export const CODEHOST_TOKEN = "ghs_commandsDefaultIdentity01";
/** tokens of people who comment on the fake (their comments need an id there to be reacted to) */
export const MEMBER_TOKEN = "ghp_octoMemberCommenter000001";
export const STRANGER_TOKEN = "ghp_strangerCommenter00000001";

const PR = JSON.parse(
  await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"), "utf8"),
) as Record<string, unknown> & {
  number: number;
  repository: { full_name: string };
  pull_request: Record<string, unknown> & {
    head: Record<string, unknown> & { repo: Record<string, unknown> };
  };
};
const COMMENT = JSON.parse(
  await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/issue_comment/created.payload.json"), "utf8"),
) as Record<string, unknown> & { issue: Record<string, unknown>; comment: Record<string, unknown> };
export const REPO = PR.repository.full_name;

/** Answers with what the run gave it; a run reaching it is a run that started. */
const ECHO_AGENT = `#!/usr/bin/env node
const prompt = require("node:fs").readFileSync(0, "utf8");
const inPrompt = /^command args: (.*)$/m.exec(prompt);
console.log(JSON.stringify({
  command_args: process.env.COMMAND_ARGS ?? null,
  prompt_command_args: inPrompt ? JSON.parse(inPrompt[1]) : null,
  event: process.env.EVENT_NAME,
}));
`;

export type Association =
  | "OWNER"
  | "MEMBER"
  | "COLLABORATOR"
  | "CONTRIBUTOR"
  | "FIRST_TIME_CONTRIBUTOR"
  | "NONE";

export interface CommandBed {
  github: FakeGitHub;
  pool: pg.Pool;
  worker: RoleProcess;
  ingress: RoleProcess;
  /** a comment on pull request `number`, made on the fake as `token`'s user, then delivered; its trigger and comment id */
  comment(
    number: number,
    body: string,
    by: { token: string; association: Association },
    /** the pull request author's association (the issue's); default the fixture's */
    prAuthor?: Association,
  ): Promise<{ trigger: string; commentId: number }>;
  /** a `pull_request.<action>` delivery by an author of `association`, from a fork when `fork` */
  pullRequest(
    number: number,
    action: string,
    author: { association: Association; fork?: boolean },
  ): Promise<string>;
  close(): Promise<void>;
}

export async function startCommandBed(options: {
  /** pipeline name → its file's body after `version`/`agent`/`targets` */
  pipelines: Record<string, string>;
  /** more `codehost:` keys of daemon.yaml (indented two spaces) */
  codehost?: string;
}): Promise<CommandBed> {
  const database: TestDatabase = await createTestDatabase(inject("adminDatabaseUrl"));
  const github = await startFakeGitHub({
    users: { [CODEHOST_TOKEN]: "svc-bot", [MEMBER_TOKEN]: "octo-member", [STRANGER_TOKEN]: "stranger" },
  });
  const files: Record<string, string> = {
    "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
targets:
  echo: { runtime: command, command: ["./bin/echo-agent"], timeout: 30s }
ask:
  targets: [echo]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
${options.codehost ?? ""}
worker:
  concurrency: 2
  grace_period: 2s
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
    "bin/echo-agent": ECHO_AGENT,
  };
  for (const [name, body] of Object.entries(options.pipelines))
    files[`pipelines/${name}.yaml`] =
      `version: 1.0.0\nagent: reviewer\ntargets: [echo]\ninstructions: Review.\n${body}`;
  const dir = await writeConfigDir(files, ["bin/echo-agent"]);
  const env = { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url, GITHUB_SECRET, CODEHOST_TOKEN };
  const { role: ingress, url } = await startIngress(env);
  const worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const deliver = async (event: string, payload: unknown) => {
    const response = await postSignedDelivery(url, GITHUB_SECRET, event, payload);
    const text = await response.text();
    if (response.status !== 202) throw new Error(`the github webhook answered ${response.status}: ${text}`);
    return (JSON.parse(text) as { trigger: string }).trigger;
  };
  return {
    github,
    pool,
    worker,
    ingress,
    comment: async (number, body, by, prAuthor) => {
      const made = await fetch(`${github.url}/repos/${REPO}/issues/${number}/comments`, {
        method: "POST",
        headers: { authorization: `token ${by.token}`, "content-type": "application/json" },
        body: JSON.stringify({ body }),
      });
      if (made.status !== 201) throw new Error(`the fake refused the comment: ${made.status}`);
      const posted = (await made.json()) as { id: number; user: { login: string } };
      const trigger = await deliver("issue_comment", {
        ...COMMENT,
        repository: PR.repository,
        // an issue comment is on a pull request when its issue carries pull_request
        issue: {
          ...COMMENT.issue,
          number,
          pull_request: { url: `${github.url}/repos/${REPO}/pulls/${number}` },
          ...(prAuthor ? { author_association: prAuthor } : {}),
        },
        comment: {
          ...COMMENT.comment,
          id: posted.id,
          body,
          user: posted.user,
          author_association: by.association,
        },
      });
      return { trigger, commentId: posted.id };
    },
    pullRequest: (number, action, author) => {
      const head = PR.pull_request.head;
      return deliver("pull_request", {
        ...PR,
        action,
        number,
        pull_request: {
          ...PR.pull_request,
          number,
          author_association: author.association,
          head: {
            ...head,
            repo: author.fork ? { ...head.repo, id: 99, full_name: "stranger/Hello-World" } : head.repo,
          },
        },
      });
    },
    close: async () => {
      await worker.stop();
      await ingress.stop();
      await pool.end();
      await database.drop();
      await github.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
