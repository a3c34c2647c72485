import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readCommand } from "../../../worker/event/command.ts";
import { eventContext, isOutsider } from "../../../worker/event/context.ts";

const FIXTURES = join(import.meta.dirname, "../../../ingress/webhooks/gitlab/fixtures");
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));

describe("the event model of GitLab's documented payloads", () => {
  it("a merge request: the project, its last commit, its source branch and iid", () => {
    expect(eventContext("codehost", fixture("merge-request.json"), "member")).toEqual({
      repo: "gitlabhq/gitlab-test",
      sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      branch: "ms-viewport",
      outsider: false,
      number: 1,
      pull: true,
      gitlab: true,
    });
  });

  it("a note on a merge request: the merge request's number and last commit", () => {
    expect(eventContext("codehost", fixture("note-merge-request.json"), "member")).toEqual({
      repo: "gitlab-org/gitlab-test",
      sha: "562e173be03b8ff2efb05345d12df18815438a4b",
      branch: "master",
      outsider: false,
      number: 1,
      pull: true,
      gitlab: true,
    });
  });

  it("a push: its checkout_sha and the branch of its ref", () => {
    expect(eventContext("codehost", fixture("push.json"), "member")).toEqual({
      repo: "mike/diaspora",
      sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      branch: "master",
      outsider: false,
      gitlab: true,
    });
  });

  it("a tag push: its commit, and no branch", () => {
    expect(eventContext("codehost", fixture("tag-push.json"), "member")).toEqual({
      repo: "jsmith/example",
      sha: "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7",
      branch: "",
      outsider: false,
      gitlab: true,
    });
  });
});

describe("a GitLab event's author", () => {
  it("is an outsider unless dispatch established a developer or above: a payload states no access", () => {
    const request = fixture("merge-request.json");
    expect(eventContext("codehost", request, "owner").outsider).toBe(false);
    expect(eventContext("codehost", request, "member").outsider).toBe(false);
    expect(eventContext("codehost", request, "none").outsider).toBe(true);
    // GitLab could not be asked: unknown is a stranger
    expect(eventContext("codehost", request).outsider).toBe(true);
    expect(eventContext("codehost", { ...request, user: { access_level: 50 } }).outsider).toBe(true);
  });
});

describe("GitLab event model details", () => {
  const mergeRequest = fixture("merge-request.json");
  const attributes = mergeRequest.object_attributes as Record<string, unknown>;

  it("states the base only when the event names both its commit and its branch", () => {
    const withRefs = {
      ...mergeRequest,
      object_attributes: { ...attributes, diff_refs: { base_sha: "b".repeat(40), head_sha: "c".repeat(40) } },
    };
    expect(eventContext("codehost", withRefs).base).toEqual({ sha: "b".repeat(40), ref: "master" });
    const noBranch = {
      ...withRefs,
      object_attributes: { ...withRefs.object_attributes, target_branch: undefined },
    };
    expect(eventContext("codehost", noBranch).base).toBeUndefined();
    expect(eventContext("codehost", mergeRequest).base).toBeUndefined();
  });

  it("a push's `after` when it has no checkout_sha, nothing for a deleted branch", () => {
    const push = fixture("push.json");
    expect(eventContext("codehost", { ...push, checkout_sha: null, after: "e".repeat(40) })).toMatchObject({
      repo: "mike/diaspora",
      sha: "e".repeat(40),
    });
    const deleted = { ...push, checkout_sha: null, after: "0".repeat(40) };
    expect(eventContext("codehost", deleted)).toMatchObject({
      repo: "mike/diaspora",
      sha: "",
      branch: "master",
    });
  });

  it("a fork's merge request is an outsider's, and a note on it too", () => {
    const fork = { ...mergeRequest, object_attributes: { ...attributes, source_project_id: 15 } };
    expect(eventContext("codehost", fork).outsider).toBe(true);
    expect(isOutsider(fork)).toBe(true);
    const note = fixture("note-merge-request.json");
    const forkNote = {
      ...note,
      merge_request: { ...(note.merge_request as object), source_project_id: 99 },
    };
    expect(eventContext("codehost", forkNote).outsider).toBe(true);
  });

  it("flags only payloads with an object_kind and a project as GitLab's", () => {
    expect(eventContext("codehost", { object_kind: "push", ref: "refs/heads/main" }).gitlab).toBeUndefined();
    expect(eventContext("webhook", { repo: "acme/app", project: {} }).gitlab).toBeUndefined();
    expect(
      eventContext("codehost", { repository: { full_name: "acme/app" }, pull_request: { number: 3 } }).gitlab,
    ).toBeUndefined();
    expect(
      eventContext("codehost", { object_kind: "issue", project: { path_with_namespace: "a/b" } }, "owner"),
    ).toEqual({
      repo: "a/b",
      sha: "",
      branch: "",
      outsider: false,
      gitlab: true,
    });
  });

  it("a replayed GitLab payload still names the agent a replay asks for", () => {
    expect(eventContext("replay", { ...fixture("push.json"), agent: "helper" })).toMatchObject({
      repo: "mike/diaspora",
      agent: "helper",
      gitlab: true,
    });
  });
});

describe("a GitLab note as a comment command", () => {
  const note = fixture("note-merge-request.json");
  const commanding = (action: string) => ({
    ...note,
    object_attributes: { ...(note.object_attributes as object), note: "@svc review now", action },
  });

  it("a created note is a command", () => {
    expect(readCommand("note", commanding("create"), "svc", "member")).toMatchObject({
      word: "review",
      args: "now",
      author: "member",
      login: "root",
      repo: "gitlab-org/gitlab-test",
      number: 1,
    });
  });

  it("an edited note is not a command again", () => {
    expect(readCommand("note", commanding("update"), "svc", "member")).toBeNull();
  });
});
