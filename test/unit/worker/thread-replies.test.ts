// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import { matchPipelines } from "../../../worker/event/match.ts";
import { readReply } from "../../../worker/event/reply.ts";
import { bodyWithRepeated, dropRepeated, ruleKey } from "../../../worker/outputs/findings.ts";

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(trigger: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-replies-config-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml":
      'webhooks:\n  sources:\n    github: { verify: codehost, secret: "${HOOK}" }\ntargets:\n  local: { runtime: command, command: ["/bin/cat"] }\nask:\n  targets: [local]\n',
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/answer.yaml": `version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: answer\n${trigger}`,
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({ dir, env: { HOOK: "h" } });
}

const reply = (comment: Record<string, unknown>) => ({
  repository: { full_name: "acme/widgets" },
  pull_request: { number: 7 },
  comment: { id: 9, in_reply_to_id: 5, path: "src/app.js", diff_hunk: "@@ -1 +1 @@", ...comment },
});

describe("answers in svc's review threads: { replies: true }", () => {
  it("reads { replies: true } as a matcher of review comment replies; anything else names the key and the fix", async () => {
    const good = await load("trigger:\n  codehost:\n    - replies: true\n      repos: [acme/widgets]\n");
    if (!good.ok) throw new Error(JSON.stringify(good.problems));
    expect(good.config.pipelines.answer!.trigger?.codehost).toEqual([
      { events: ["pull_request_review_comment.created"], repos: ["acme/widgets"], replies: true },
    ]);
    const bad = await load("trigger:\n  codehost:\n    - replies: yes please\n");
    expect(bad.ok).toBe(false);
    expect(bad.problems).toMatchObject([
      {
        file: "pipelines/answer.yaml",
        path: "trigger.codehost[0].replies",
        code: "invalid_value",
        message: expect.stringContaining("write { replies: true }"),
      },
    ]);
  });

  it("a replies matcher fires on a reply only, never on svc's own reply nor a thread's first comment", async () => {
    const loaded = await load("trigger:\n  codehost:\n    - replies: true\n");
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const fire = (payload: unknown) =>
      matchPipelines(loaded.config, {
        kind: "codehost",
        source: "github",
        eventName: "pull_request_review_comment.created",
        repo: "acme/widgets",
        reply: readReply("pull_request_review_comment.created", payload) !== null,
      }).map((p) => p.name);
    expect(fire(reply({ body: "Why?", user: { login: "octo", type: "User" } }))).toEqual(["answer"]);
    expect(
      fire(reply({ body: "Because.\n<!-- svc:inv_1:reply:abc -->", user: { login: "svc-bot" } })),
    ).toEqual([]);
    expect(fire(reply({ body: "Because.", user: { login: "svc[bot]", type: "Bot" } }))).toEqual([]);
    expect(fire(reply({ body: "First.", in_reply_to_id: undefined, user: { login: "octo" } }))).toEqual([]);
  });

  it("readReply gives the thread's first comment, the path and the lines", () => {
    expect(
      readReply("pull_request_review_comment.created", reply({ body: "Why?", user: { login: "octo" } })),
    ).toEqual({
      commentId: 9,
      inReplyTo: 5,
      path: "src/app.js",
      body: "Why?",
      login: "octo",
      diffHunk: "@@ -1 +1 @@",
    });
  });
});

describe("dismissed findings are dropped and counted", () => {
  const files = [{ filename: "src/app.js", patch: "@@ -1,2 +1,3 @@\n a\n+b\n c" }];
  const finding = { path: "src/app.js", line: 2, side: "RIGHT" as const, body: "B can throw\n\nbecause…" };

  it("by the same rule on the same path, whatever its fingerprint", () => {
    const dismissed = {
      fingerprints: new Set<string>(),
      rules: new Set([ruleKey("src/app.js", "b can  THROW")]),
    };
    const { fresh, dismissed: dropped } = dropRepeated(files, [finding], new Set(), dismissed);
    expect(fresh).toEqual([]);
    expect(dropped).toBe(1);
    const elsewhere = dropRepeated(files, [{ ...finding, path: "src/other.js" }], new Set(), dismissed);
    expect(elsewhere.dismissed).toBe(0);
    expect(bodyWithRepeated("Body.", 0, 1)).toBe("Body.\n\n1 finding dismissed before was not raised again");
    expect(bodyWithRepeated("Body.", 1, 2)).toBe(
      "Body.\n\n1 finding already reported\n2 findings dismissed before were not raised again",
    );
  });
});
