import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { workspacePaths } from "../../../shared/workspace-layout.ts";
import { classifyResponse, retryAfter } from "../../../worker/credentials/classify.ts";
import { eventContext, isOutsider } from "../../../worker/event/context.ts";
import { matchPipelines } from "../../../worker/event/match.ts";
import { runEnvironment } from "../../../worker/run/environment.ts";
import { checkResult, lastJsonObject } from "../../../worker/run/result-check.ts";
import { pipeline } from "../../support/pipeline.ts";

describe("credential verdicts (the contract's table)", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  it("401 and 403 kill; revoked and expired tokens kill whatever the status", () => {
    expect(classifyResponse(401, {}, {}, now)).toEqual({ kind: "dead", reason: "HTTP 401" });
    expect(classifyResponse(403, {}, {}, now)).toEqual({ kind: "dead", reason: "HTTP 403" });
    expect(classifyResponse(400, {}, { error: { code: "token_revoked" } }, now)).toMatchObject({
      kind: "dead",
    });
    expect(classifyResponse(400, {}, { error: { message: "This key has expired" } }, now)).toEqual({
      kind: "dead",
      reason: "token expired",
    });
  });
  it("429 cools until Retry-After, in seconds or as a date, one minute without one", () => {
    expect(classifyResponse(429, { "retry-after": "7" }, {}, now)).toEqual({
      kind: "cooling",
      until: new Date(now.getTime() + 7000),
      reason: "HTTP 429",
    });
    expect(retryAfter("Thu, 01 Jan 2026 00:05:00 GMT", now)).toEqual(new Date("2026-01-01T00:05:00Z"));
    expect(retryAfter(undefined, now)).toEqual(new Date(now.getTime() + 60_000));
  });
  it("success is ok and other failures say nothing about the credential", () => {
    expect(classifyResponse(200, {}, {}, now)).toEqual({ kind: "ok" });
    expect(classifyResponse(500, {}, "boom", now)).toEqual({ kind: "other", reason: "HTTP 500" });
  });
});

describe("pipeline matching", () => {
  const config = {
    pipelines: {
      a: pipeline("a", { trigger: { webhook: ["hook"], codehost: [], tracker: [] } }),
      b: pipeline("b", {
        trigger: { webhook: [], codehost: [{ events: ["pull_request"], repos: [] }], tracker: [] },
      }),
      c: pipeline("c", {
        trigger: {
          webhook: [],
          codehost: [{ events: ["pull_request.opened"], repos: ["acme/widgets"] }],
          tracker: [],
        },
      }),
      d: pipeline("d", {
        trigger: { webhook: [], codehost: [], tracker: [{ events: ["Issue.update"], repos: [] }] },
      }),
      e: pipeline("e"),
    },
  };
  const names = (kind: string, source: string, eventName: string, repo = "") =>
    matchPipelines(config, { kind, source, eventName, repo }).map((p) => p.name);
  it("webhooks by route name, codehost/tracker by event (bare event = every action) and repos, manual by name", () => {
    expect(names("webhook", "hook", "hook")).toEqual(["a"]);
    expect(names("codehost", "github", "pull_request.opened", "acme/widgets")).toEqual(["b", "c"]);
    expect(names("codehost", "github", "pull_request.opened", "acme/other")).toEqual(["b"]);
    expect(names("codehost", "github", "pull_request.closed", "acme/widgets")).toEqual(["b"]);
    expect(names("tracker", "linear", "Issue.update")).toEqual(["d"]);
    expect(names("manual", "e", "e")).toEqual(["e"]);
    expect(names("webhook", "nothing", "nothing")).toEqual([]);
  });
  it("an eval run's replay runs only the pipeline its source names; another unresolved replay runs none", () => {
    const replay = (evalRun: boolean) =>
      matchPipelines(config, {
        kind: "replay",
        source: "b",
        eventName: "pull_request.opened",
        repo: "acme/widgets",
        evalRun,
      }).map((p) => p.name);
    expect(replay(true)).toEqual(["b"]);
    expect(replay(false)).toEqual([]);
  });
});

describe("event context", () => {
  it("reads repository, head SHA and branch from a code-host pull request", () => {
    expect(
      eventContext("codehost", {
        repository: { full_name: "acme/widgets" },
        pull_request: { head: { sha: "abc", ref: "feature" } },
      }),
    ).toEqual({ repo: "acme/widgets", sha: "abc", branch: "feature", outsider: false, pull: true });
    expect(
      eventContext("codehost", { repository: { full_name: "a/b" }, ref: "refs/heads/main", after: "def" }),
    ).toEqual({
      repo: "a/b",
      sha: "def",
      branch: "main",
      outsider: false,
    });
  });
  it("reads a pull request's base, and marks a comment on a pull request as concerning one", () => {
    const base = { sha: "b".repeat(40), ref: "main" };
    expect(
      eventContext("codehost", {
        repository: { full_name: "acme/widgets" },
        pull_request: { number: 7, head: { sha: "abc", ref: "feature" }, base },
      }),
    ).toMatchObject({ number: 7, pull: true, base });
    const comment = eventContext("codehost", {
      repository: { full_name: "acme/widgets" },
      issue: { number: 8, pull_request: { url: "x" } },
    });
    expect(comment).toMatchObject({ number: 8, pull: true });
    expect(comment.base).toBeUndefined();
    const issue = eventContext("codehost", {
      repository: { full_name: "acme/widgets" },
      issue: { number: 9 },
    });
    expect(issue.pull).toBeUndefined();
    // a base without its commit is not one: nothing to diff against
    expect(
      eventContext("codehost", { repository: { full_name: "a/b" }, pull_request: { base: { ref: "main" } } })
        .base,
    ).toBeUndefined();
  });
  it("names the agent of a fire request or an agent-session event", () => {
    expect(eventContext("manual", { args: {}, agent: "x", skill: "y" })).toMatchObject({
      agent: "x",
      skill: "y",
    });
    expect(eventContext("tracker", { agentSession: { agent: { name: "z" } } })).toMatchObject({ agent: "z" });
    expect(eventContext("webhook", { agent: "ignored" }).agent).toBeUndefined();
  });
});

describe("outsiders", () => {
  const repo = (full_name: string | null) => (full_name === null ? null : { full_name });
  const pull = (head: string | null, association = "MEMBER") => ({
    repository: { full_name: "acme/app" },
    pull_request: {
      author_association: association,
      head: { sha: "abc", ref: "feature", repo: repo(head) },
      base: { ref: "main", repo: repo("acme/app") },
    },
  });

  it("a member's pull request from the repository itself is inside", () => {
    for (const association of ["OWNER", "MEMBER", "COLLABORATOR"])
      expect(isOutsider(pull("acme/app", association))).toBe(false);
    expect(isOutsider(pull("ACME/App"))).toBe(false);
    expect(eventContext("codehost", pull("acme/app")).outsider).toBe(false);
  });

  it("a pull request from a fork is an outsider's, even by a member, and so is one whose fork was deleted", () => {
    expect(isOutsider(pull("stranger/app"))).toBe(true);
    expect(isOutsider(pull(null))).toBe(true);
    expect(eventContext("codehost", pull("stranger/app")).outsider).toBe(true);
  });

  it("any author_association but OWNER, MEMBER or COLLABORATOR makes the event an outsider's", () => {
    for (const association of ["CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "NONE"])
      expect(isOutsider(pull("acme/app", association))).toBe(true);
    // a member commenting on a stranger's issue or pull request: the issue's text is still the stranger's
    expect(
      isOutsider({
        issue: { author_association: "NONE", pull_request: {} },
        comment: { author_association: "MEMBER" },
      }),
    ).toBe(true);
    expect(isOutsider({ comment: { author_association: "FIRST_TIMER" } })).toBe(true);
    expect(isOutsider({ review: { author_association: "CONTRIBUTOR" } })).toBe(true);
    expect(isOutsider({ comment: { author_association: 7 } })).toBe(true);
    expect(
      isOutsider({ comment: { author_association: "OWNER" }, issue: { author_association: "COLLABORATOR" } }),
    ).toBe(false);
  });

  it("a GitLab merge request from another project is an outsider's", () => {
    const mr = (source: number, target: number) => ({
      object_kind: "merge_request",
      object_attributes: { source_project_id: source, target_project_id: target },
    });
    expect(isOutsider(mr(7, 7))).toBe(false);
    expect(isOutsider(mr(8, 7))).toBe(true);
    expect(
      isOutsider({ object_kind: "note", merge_request: { source_project_id: 8, target_project_id: 7 } }),
    ).toBe(true);
  });

  it("events that carry no pull request, comment or merge request are inside (operators and members send them)", () => {
    expect(isOutsider({ repository: { full_name: "acme/app" }, ref: "refs/heads/main", after: "def" })).toBe(
      false,
    );
    expect(isOutsider({ args: { repo: "acme/app" } })).toBe(false);
    expect(isOutsider(null)).toBe(false);
  });
});

describe("results", () => {
  it("takes the last JSON object printed", () => {
    expect(lastJsonObject('noise\n{"a": 1}\nmore\n{"b": 2}\n')).toEqual({ b: 2 });
    expect(lastJsonObject("no json here")).toBeUndefined();
    expect(lastJsonObject('{\n  "pretty": true\n}\n')).toEqual({ pretty: true });
  });
  it("names the failing path, including a missing property", () => {
    const schema = {
      type: "object",
      properties: { review: { $ref: "svc://schemas/codehost/review/v1" } },
      required: ["review"],
    };
    expect(checkResult(schema, { review: { event: "COMMENT", body: "ok" } })).toBeNull();
    expect(checkResult(schema, {})).toMatchObject({ code: "result_invalid", path: "/review" });
    expect(checkResult(schema, { review: { event: "COMMENT" } })).toMatchObject({ path: "/review/body" });
  });
});

describe("setup-step environment", () => {
  it("holds exactly the contract's variables, the env manifest, PATH and HOME, whatever the worker's environment", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.dictionary(fc.constantFrom("A", "DEPLOY", "X_Y"), fc.string()),
        (payloadText, manifest) => {
          const env = runEnvironment({
            workspace: workspacePaths("/c", "run_x", "inv_y"),
            repo: "acme/widgets",
            sha: "abc",
            branch: "main",
            eventName: "e",
            eventSource: "webhook",
            payload: { text: payloadText },
            pipeline: { env: manifest },
          });
          const expected = [
            "WORKTREE",
            "RUN_DIR",
            "SURFACE_DIR",
            "REPO",
            "SHA",
            "BRANCH",
            "EVENT_NAME",
            "EVENT_SOURCE",
            "PAYLOAD_JSON",
            "PREVIOUS_SHA",
            "BASE_SHA",
            "BASE_REF",
            "PATH",
            "HOME",
            ...Object.keys(manifest),
          ];
          expect(Object.keys(env).sort()).toEqual([...new Set(expected)].sort());
          expect(JSON.parse(env.PAYLOAD_JSON!)).toEqual({ text: payloadText });
        },
      ),
    );
  });
});
