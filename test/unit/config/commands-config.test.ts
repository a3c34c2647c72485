// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { botName } from "../../../shared/config/authors.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { readCommand } from "../../../worker/event/command.ts";

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const DAEMON = `webhooks:
  sources:
    github: { verify: codehost, secret: "\${HOOK}" }
targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
`;

async function load(daemon: string, pipelineTail: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-commands-config-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml": daemon,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/review.yaml": `version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: review\n${pipelineTail}`,
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({ dir, env: { HOOK: "h", CODEHOST_TOKEN: "t" } });
}

describe("comment commands and author gates in the configuration", () => {
  it("reads { command }, authors, codehost.bot_name and codehost.commands_from", async () => {
    const result = await load(
      `${DAEMON}codehost:\n  token: \${CODEHOST_TOKEN}\n  bot_name: reviewer-bot\n  commands_from: [owner, member]\n`,
      "trigger:\n  codehost:\n    - pull_request.opened\n    - command: review\nauthors: [member, contributor]\n",
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    const review = result.config.pipelines.review!;
    expect(review.trigger?.codehost).toEqual([
      { events: ["pull_request.opened"], repos: [] },
      { events: ["issue_comment.created", "note"], repos: [], command: "review" },
    ]);
    expect(review.authors).toEqual(["member", "contributor"]);
    expect(result.config.codehost).toMatchObject({
      botName: "reviewer-bot",
      commandsFrom: ["owner", "member"],
    });
    expect(botName(result.config)).toBe("reviewer-bot");
  });

  it("the bot name defaults to svc", () => {
    expect(botName({})).toBe("svc");
    expect(botName({ codehost: {} })).toBe("svc");
  });

  it("a built-in word, a bad word and an unknown author association name the key and the fix", async () => {
    const result = await load(
      `${DAEMON}codehost:\n  token: \${CODEHOST_TOKEN}\n  commands_from: [admins]\n`,
      "trigger:\n  codehost:\n    - command: pause\n    - command: Review Now\nauthors: [members]\n",
    );
    expect(result.ok).toBe(false);
    expect(result.problems).toMatchObject([
      {
        file: "daemon.yaml",
        path: "codehost.commands_from[0]",
        code: "invalid_value",
        message: expect.stringContaining(
          "owner, member, collaborator, contributor, first_time_contributor, none",
        ),
      },
      {
        file: "pipelines/review.yaml",
        path: "trigger.codehost[0].command",
        code: "invalid_value",
        message: expect.stringContaining("svc's own"),
      },
      {
        file: "pipelines/review.yaml",
        path: "trigger.codehost[1].command",
        code: "invalid_value",
        message: expect.stringContaining("one lower-case word"),
      },
      {
        file: "pipelines/review.yaml",
        path: "authors[0]",
        code: "invalid_value",
        message: expect.stringContaining('author "members" is not an author association'),
      },
    ]);
  });
});

describe("readCommand", () => {
  const comment = (body: string, onPull = true) => ({
    repository: { full_name: "acme/widgets" },
    issue: { number: 7, ...(onPull ? { pull_request: { url: "u" } } : {}) },
    comment: { id: 5, body, author_association: "MEMBER", user: { login: "octo" } },
  });

  it("takes the word and the rest of the first line", () => {
    expect(readCommand("issue_comment.created", comment("  @svc Review  please look\nmore"), "svc")).toEqual({
      word: "review",
      args: "please look",
      author: "member",
      login: "octo",
      repo: "acme/widgets",
      number: 7,
      commentId: 5,
    });
  });

  it("ignores comments not addressed to the bot, not at the start, or not on a pull request", () => {
    for (const body of ["review please", "hi @svc review", "@svcbot review", "@svc", "@svc !review"])
      expect(readCommand("issue_comment.created", comment(body), "svc")).toBeNull();
    expect(readCommand("issue_comment.created", comment("@svc review", false), "svc")).toBeNull();
    expect(readCommand("issue_comment.edited", comment("@svc review"), "svc")).toBeNull();
  });

  it("reads a GitLab merge request note as written by the author dispatch established, never by the payload's word", () => {
    const note = (level: number | undefined) => ({
      object_kind: "note",
      project: { path_with_namespace: "group/app" },
      object_attributes: { note: "@svc review quick", noteable_type: "MergeRequest" },
      merge_request: { iid: 3 },
      user: { username: "dev", ...(level === undefined ? {} : { access_level: level }) },
    });
    expect(readCommand("note", note(undefined), "svc", "member")).toMatchObject({
      word: "review",
      args: "quick",
      author: "member",
      number: 3,
    });
    expect(readCommand("note", note(undefined), "svc", "owner")?.author).toBe("owner");
    // a relay (or a forged delivery) writing an access level into the payload gains nothing
    expect(readCommand("note", note(50), "svc")?.author).toBe("none");
    expect(readCommand("note", note(50), "svc", "none")?.author).toBe("none");
  });
});
