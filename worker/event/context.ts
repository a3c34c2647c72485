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
 * `author`: the association svc established for a GitLab event's author (worker/queue/gitlab-author.ts);
 * without it a GitLab event's author is unknown, and unknown is a stranger.
 */
export function eventContext(kind: string, payload: unknown, author?: string): EventContext {
  const body = obj(payload) ?? {};
  const context = isGitlab(body) ? gitlabContext(body, author) : githubContext(body);
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

/** GitHub's shapes, and the flat `repo`/`sha`/`branch` (or `args`) of bearer webhooks and fires. */
function githubContext(body: Json): EventContext {
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
  const context: EventContext = { repo, sha, branch, outsider: isOutsider(body) };
  const number = eventNumber(body);
  if (number !== undefined) context.number = number;
  if (pull || obj(obj(body.issue)?.pull_request)) context.pull = true;
  const base = obj(pull?.base);
  const baseSha = str(base?.sha);
  const baseRef = str(base?.ref);
  if (baseSha && baseRef) context.base = { sha: baseSha, ref: baseRef };
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
    outsider: isOutsider(body) || !insider,
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

/** The code host's `author_association` values of the repository's own people. */
const INSIDER_ASSOCIATIONS = new Set(["OWNER", "MEMBER", "COLLABORATOR"]);

function sameName(a: unknown, b: unknown): boolean {
  return typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();
}

function projectId(value: unknown): string | undefined {
  return typeof value === "number" || typeof value === "string" ? String(value) : undefined;
}

/**
 * Whether an event comes from outside the repository's team, so that what its run writes (a note)
 * must not reach other runs until an operator trusts it. Outside means: a GitHub pull request from
 * another repository than its base (a fork, or a head repository deleted since: `head.repo` null);
 * an `author_association` of the pull request, comment, issue or review that is not OWNER, MEMBER
 * or COLLABORATOR (CONTRIBUTOR, FIRST_TIMER, NONE, or anything unreadable); a GitLab merge request
 * whose source project is not its target project. Read from the payload whatever the trigger kind:
 * a bearer webhook relaying a pull request carries the same stranger's text.
 */
export function isOutsider(payload: unknown): boolean {
  const body = obj(payload) ?? {};
  const pull = obj(body.pull_request);
  const head = obj(pull?.head);
  if (head && "repo" in head) {
    const headRepo = obj(head.repo);
    if (!headRepo) return true;
    const base = obj(obj(pull?.base)?.repo) ?? obj(body.repository);
    const baseName = base?.full_name;
    if (typeof baseName === "string" && !sameName(headRepo.full_name, baseName)) return true;
  }
  for (const key of ["pull_request", "comment", "issue", "review"]) {
    const part = obj(body[key]);
    if (part && "author_association" in part) {
      const association = part.author_association;
      if (typeof association !== "string" || !INSIDER_ASSOCIATIONS.has(association.toUpperCase()))
        return true;
    }
  }
  // GitLab: a merge request event carries it as object_attributes, a comment on one as merge_request
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
