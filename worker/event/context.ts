import type { AuthorAssociation } from "../../shared/config/types.ts";
import { commentedPull, type Facts, judgeGithubAuthor } from "./authors.ts";

/**
 * What a trigger's payload says about the code it concerns and the agent it addresses. The
 * shapes are the code hosts' (GitHub's and GitLab's) and the tracker's (Linear-style) webhook
 * bodies; a bearer webhook or a manual fire may name `repo`, `sha` and `branch` at the top level or
 * under `args`.
 */
export interface EventContext {
  repo: string;
  sha: string;
  branch: string;
  /** an agent the event or fire request addresses explicitly */
  agent?: string;
  /** a skill the fire request names explicitly */
  skill?: string;
  /** the event comes from outside the repository's team (isOutsider): what its run writes is untrusted */
  outsider: boolean;
  /** the pull request's (or issue's, merge request's) number, when the event concerns one (eventNumber) */
  number?: number;
  /** the event concerns a pull request (its own event, a review, or a comment on it): `number` is one */
  pull?: boolean;
  /** a pull request's base as its event states it: the branch it merges into, and that branch's commit */
  base?: { sha: string; ref: string };
  /**
   * The payload is GitLab's (it has an `object_kind` and a `project`): `repo` is the project's
   * `path_with_namespace` and `number` a merge request's `iid`, so a checkout must fetch a merge
   * request's head from `refs/merge-requests/<iid>/head`, not GitHub's `refs/pull/<number>/head`.
   */
  gitlab?: true;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

function named(value: unknown): string | undefined {
  return str(value) ?? str(obj(value)?.name);
}

/**
 * `author`: the association dispatch established where the payload states none (GitLab's members
 * API, worker/queue/gitlab-author.ts; GitHub's permission API for a sender, worker/queue/github-facts.ts);
 * without it such an author is unknown, and unknown is a stranger. `facts`: the head dispatch read
 * for a comment on a pull request, and the channel a replay's original came through.
 */
export function eventContext(
  kind: string,
  payload: unknown,
  author?: string,
  facts: Omit<Facts, "author"> = {},
): EventContext {
  const body = obj(payload) ?? {};
  const context = isGitlab(body)
    ? gitlabContext(body, author)
    : githubContext(body, { ...facts, channel: facts.channel ?? kind, author: established(author) });
  if (kind === "manual" || kind === "replay") {
    const agent = named(body.agent);
    const skill = named(body.skill);
    if (agent) context.agent = agent;
    if (skill) context.skill = skill;
  } else if (kind === "tracker") {
    // an agent-session event addresses one agent; the replacement of the removed agents.<name>.watch
    const session = obj(body.agentSession);
    const agent = named(session?.agent) ?? named(body.agent);
    if (agent) context.agent = agent;
  }
  return context;
}

function established(author: string | undefined): Facts["author"] {
  return author === "owner" || author === "member" || author === "none" ? author : undefined;
}

/**
 * GitHub's shapes, and the flat `repo`/`sha`/`branch` (or `args`) of bearer webhooks and fires. A
 * comment on a pull request states no head: the head dispatch read (`facts.head`) is its commit,
 * branch and base, so the run checks out and publishes against the code the command was given on.
 */
function githubContext(body: Json, facts: Facts): EventContext {
  const args = obj(body.args) ?? {};
  const repository = obj(body.repository);
  const pull = obj(body.pull_request);
  const head = obj(pull?.head);
  const checkSuite = obj(body.check_suite);
  const repo = str(repository?.full_name) ?? str(body.repo) ?? str(args.repo) ?? "";
  const sha =
    str(head?.sha) ??
    str(checkSuite?.head_sha) ??
    (str(body.after) && !/^0+$/.test(String(body.after)) ? str(body.after) : undefined) ??
    str(body.sha) ??
    str(args.sha) ??
    "";
  const ref = str(body.ref);
  const branch =
    str(head?.ref) ??
    str(checkSuite?.head_branch) ??
    (ref?.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : undefined) ??
    str(body.branch) ??
    str(args.branch) ??
    "";
  const outsider = judgeGithubAuthor(body, facts).outsider || gitlabFork(body);
  const context: EventContext = { repo, sha, branch, outsider };
  const number = eventNumber(body);
  if (number !== undefined) context.number = number;
  if (pull || obj(obj(body.issue)?.pull_request)) context.pull = true;
  const base = obj(pull?.base);
  const baseSha = str(base?.sha);
  const baseRef = str(base?.ref);
  if (baseSha && baseRef) context.base = { sha: baseSha, ref: baseRef };
  const read = facts.head;
  if (read && commentedPull(body) !== undefined) {
    context.sha = read.sha;
    context.branch = read.ref;
    context.base = { sha: read.base.sha, ref: read.base.ref };
  }
  return context;
}

export function isGitlabPayload(payload: unknown): boolean {
  return isGitlab(obj(payload) ?? {});
}

function isGitlab(body: Json): boolean {
  return str(body.object_kind) !== undefined && obj(body.project) !== undefined;
}

function nonZeroSha(value: unknown): string | undefined {
  const sha = str(value);
  return sha && !/^0+$/.test(sha) ? sha : undefined;
}

/**
 * A GitLab delivery's context. A merge request states its head and branches in
 * `object_attributes`, a comment on one in `merge_request`; a push (or tag push) its commit in
 * `checkout_sha` (null when a branch is deleted) or `after`. The base is set only when the event
 * states both its commit (`diff_refs.base_sha`) and its branch, as GitHub's is.
 */
function gitlabContext(body: Json, author: string | undefined): EventContext {
  const repo = str(obj(body.project)?.path_with_namespace) ?? "";
  const request =
    body.object_kind === "merge_request"
      ? obj(body.object_attributes)
      : body.object_kind === "note"
        ? obj(body.merge_request)
        : undefined;
  // GitLab's payloads say nothing of the author's access: an author the members API did not place
  // at developer or above is outside the team, as is everyone when it could not be asked
  const insider = author === "owner" || author === "member";
  const context: EventContext = {
    repo,
    sha: "",
    branch: "",
    outsider: gitlabFork(body) || !insider,
    gitlab: true,
  };
  if (request) {
    context.sha = str(obj(request.last_commit)?.id) ?? "";
    context.branch = str(request.source_branch) ?? "";
    context.pull = true;
    const baseSha = str(obj(request.diff_refs)?.base_sha);
    const baseRef = str(request.target_branch);
    if (baseSha && baseRef) context.base = { sha: baseSha, ref: baseRef };
  } else {
    // a job event states its commit as a top-level `sha`
    context.sha = nonZeroSha(body.checkout_sha) ?? nonZeroSha(body.after) ?? nonZeroSha(body.sha) ?? "";
    const ref = str(body.ref);
    if (ref?.startsWith("refs/heads/")) context.branch = ref.slice("refs/heads/".length);
  }
  const number = eventNumber(body);
  if (number !== undefined) context.number = number;
  return context;
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/**
 * The number of the pull request or issue an event concerns: GitHub's `pull_request.number`,
 * `issue.number` (an issue or a comment on a pull request) or the delivery's own `number`; GitLab's
 * merge request `iid`; a bearer webhook's or a fire's `number` (top level or under `args`).
 * Undefined when the payload names none (a push, a schedule), or names it as anything but a
 * positive integer.
 */
export function eventNumber(payload: unknown): number | undefined {
  const body = obj(payload) ?? {};
  const gitlab = body.object_kind === "merge_request" ? obj(body.object_attributes) : undefined;
  return (
    positiveInteger(obj(body.pull_request)?.number) ??
    positiveInteger(obj(body.issue)?.number) ??
    positiveInteger(gitlab?.iid) ??
    positiveInteger(obj(body.merge_request)?.iid) ??
    positiveInteger(body.number) ??
    positiveInteger(obj(body.args)?.number)
  );
}

function projectId(value: unknown): string | undefined {
  return typeof value === "number" || typeof value === "string" ? String(value) : undefined;
}

/** A GitLab merge request (or a note on one) whose source project is not its target project. */
function gitlabFork(body: Json): boolean {
  // a merge request event carries it as object_attributes, a comment on one as merge_request
  const merge = [
    body.object_kind === "merge_request" ? obj(body.object_attributes) : undefined,
    obj(body.merge_request),
  ];
  for (const request of merge) {
    const source = projectId(request?.source_project_id);
    const target = projectId(request?.target_project_id);
    if (source !== undefined && target !== undefined && source !== target) return true;
  }
  return false;
}

/**
 * Whether an event comes from outside the repository's team, so that the author gates hold it to
 * sandboxed pipelines and what its run writes (a note) must not reach other runs until an operator
 * trusts it: a fork's code, an author outside OWNER, MEMBER, COLLABORATOR, or an author svc could
 * not establish (worker/event/authors.ts has the whole rule); a GitLab merge request whose source
 * project is not its target project. Read from the payload whatever the trigger kind: a bearer
 * webhook relaying a pull request carries the same stranger's text. `facts` default to a code
 * host's delivery with nothing established, the strictest reading.
 */
export function isOutsider(payload: unknown, facts: Facts = {}): boolean {
  const body = obj(payload) ?? {};
  return gitlabFork(body) || (!isGitlab(body) && judgeGithubAuthor(body, facts).outsider);
}

/**
 * The association the author gates judge an event's `authors` by: GitHub's as worker/event/authors.ts
 * reads it (`owner` for an event that names no person: the operator's); a GitLab event's as
 * dispatch established it, `none` without. A fork's code is `none` whoever wrote it.
 */
export function eventAuthor(payload: unknown, facts: Facts = {}): AuthorAssociation {
  const body = obj(payload) ?? {};
  if (gitlabFork(body)) return "none";
  if (isGitlab(body)) return facts.author ?? "none";
  return judgeGithubAuthor(body, facts).author;
}
