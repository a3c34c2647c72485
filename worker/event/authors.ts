import type { PullHead } from "../../shared/codehost/github-reads.ts";
import type { AuthorAssociation } from "../../shared/config/types.ts";

/** What dispatch established about an event where its payload cannot say, and how it came. */
export interface Facts {
  /** the author's association dispatch established (GitLab's members API, GitHub's permission API) */
  author?: "owner" | "member" | "none" | undefined;
  /** the head dispatch read for a comment on a pull request */
  head?: PullHead | undefined;
  /** the trigger kind that delivered the payload: a replay's original kind */
  channel?: string;
}

export interface Judged {
  author: AuthorAssociation;
  fork: boolean;
  outsider: boolean;
}

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const str = (value: unknown): string | undefined =>
  typeof value === "string" && value.length > 0 ? value : undefined;

const ASSOCIATIONS: Record<string, AuthorAssociation> = {
  OWNER: "owner",
  MEMBER: "member",
  COLLABORATOR: "collaborator",
  CONTRIBUTOR: "contributor",
  FIRST_TIME_CONTRIBUTOR: "first_time_contributor",
  FIRST_TIMER: "first_time_contributor",
  NONE: "none",
};

/** GitHub's `author_association`, lower-cased; anything unreadable counts as `none`. */
export function association(value: unknown): AuthorAssociation {
  return (typeof value === "string" && ASSOCIATIONS[value.toUpperCase()]) || "none";
}

const AUTHOR_PARTS = ["pull_request", "comment", "issue", "review", "discussion", "answer"];
const INSIDERS = new Set<AuthorAssociation>(["owner", "member", "collaborator"]);
/** channels that carry someone else's event; manual fires and schedules are the operator's */
const DELIVERED = new Set(["codehost", "webhook"]);

function stated(body: Json): AuthorAssociation[] {
  const found: AuthorAssociation[] = [];
  for (const key of AUTHOR_PARTS) {
    const part = obj(body[key]);
    if (part && "author_association" in part) found.push(association(part.author_association));
  }
  return found;
}

/** The login a GitHub-shaped payload names as the person who caused it. */
export function namedSender(payload: unknown): string | undefined {
  const body = obj(payload) ?? {};
  return str(obj(body.sender)?.login) ?? str(obj(body.pusher)?.name);
}

/** Whether dispatch must ask GitHub who the event's author is: no part states it, a sender is named. */
export function needsSenderPermission(payload: unknown): boolean {
  const body = obj(payload) ?? {};
  return stated(body).length === 0 && namedSender(body) !== undefined;
}

/** The number of the pull request an `issue_comment` is on, whose head the payload does not state. */
export function commentedPull(payload: unknown): number | undefined {
  const body = obj(payload) ?? {};
  if (obj(body.pull_request)) return undefined;
  const issue = obj(body.issue);
  const number = issue?.number;
  return obj(issue?.pull_request) && typeof number === "number" && Number.isSafeInteger(number) && number > 0
    ? number
    : undefined;
}

function sameName(a: unknown, b: unknown): boolean {
  return typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();
}

/**
 * Two repository objects are one when neither their ids nor their full names disagree, and at least
 * one of the two can be compared: a repository svc cannot place is not the base.
 */
function sameRepository(a: Json, b: Json | undefined): boolean {
  if (!b) return false;
  const ids = typeof a.id === "number" && typeof b.id === "number";
  const names = typeof a.full_name === "string" && typeof b.full_name === "string";
  return (ids || names) && (!ids || a.id === b.id) && (!names || sameName(a.full_name, b.full_name));
}

/** A part whose `key` is present: a repository that is not `base` (or null: deleted) is a fork. */
function foreign(part: Json, key: string, base: Json | undefined): boolean {
  if (!(key in part)) return false;
  const repo = obj(part[key]);
  return !repo || !sameRepository(repo, base);
}

export function fromFork(payload: unknown, head?: PullHead): boolean {
  const body = obj(payload) ?? {};
  const repository = obj(body.repository);
  const pull = obj(body.pull_request);
  const pullHead = obj(pull?.head);
  if (pullHead && foreign(pullHead, "repo", obj(obj(pull?.base)?.repo) ?? repository)) return true;
  for (const key of ["workflow_run", "check_suite", "check_run"]) {
    const part = obj(body[key]);
    if (!part) continue;
    if (foreign(part, "head_repository", repository) || foreign(part, "head_repo", repository)) return true;
    const pulls = [part.pull_requests, obj(part.check_suite)?.pull_requests].flatMap((list) =>
      Array.isArray(list) ? list : [],
    );
    for (const entry of pulls) {
      const head = obj(obj(entry)?.head);
      if (head && foreign(head, "repo", obj(obj(obj(entry)?.base)?.repo))) return true;
    }
  }
  if (head) {
    if (head.repo === null) return true;
    const base = head.base.repo ?? str(repository?.full_name);
    if (!sameName(head.repo, base)) return true;
  }
  return false;
}

/**
 * Who wrote a GitHub-shaped event, as far as svc may trust, judged from the payload and what
 * dispatch established where the payload cannot say (worker/queue/github-facts.ts). The rule,
 * first that applies:
 *
 * 1. Parts that state `author_association` (`pull_request`, `comment` of any kind, `issue`,
 *    `review`, `discussion`, a discussion's `answer`): the first names the author; any of them
 *    outside OWNER, MEMBER, COLLABORATOR makes the event an outsider's.
 * 2. Otherwise, a delivered event (a code host's or a webhook route's, replays judged as their
 *    original) naming a person (`sender`, or a push's `pusher`) is that person's repository
 *    permission as dispatch asked GitHub for it; not asked, or GitHub not answering, is `none`.
 *    A push by a member is a member's; a `workflow_run`, `check_suite` or `release` by a stranger
 *    is a stranger's.
 * 3. Otherwise it counts as `owner`: a manual fire or a schedule, whatever its payload names (the
 *    operator's, through the API or daemon.yaml), and a delivered payload that names no person: a
 *    bearer webhook's own flat body (whoever holds the route's secret). GitHub names a `sender` in
 *    every delivery, so a GitHub event reaches this rule only if its payload was not GitHub's.
 *
 * A fork's code is an outsider's whoever wrote the event, and its author counts as `none`: a pull
 * request whose head repository is not its base's (or was deleted), a `workflow_run` or
 * `check_suite` (or `check_run`) whose `head_repository` (`head_repo`) is not the repository, a
 * `pull_requests` entry whose head repository is not its base's, and the head dispatch read for a
 * comment on a pull request. A delivered comment on a pull request whose head svc could not read
 * is an outsider's as well: its code may be a fork's.
 */
export function judgeGithubAuthor(payload: unknown, facts: Facts = {}): Judged {
  const body = obj(payload) ?? {};
  const delivered = DELIVERED.has(facts.channel ?? "codehost");
  const fork = fromFork(body, facts.head);
  const associations = stated(body);
  let author: AuthorAssociation = "owner";
  if (associations.length > 0) author = associations[0]!;
  else if (delivered && namedSender(body) !== undefined) author = facts.author ?? "none";
  const unplacedHead = delivered && !facts.head && commentedPull(body) !== undefined;
  const outsider =
    fork ||
    unplacedHead ||
    associations.some((each) => !INSIDERS.has(each)) ||
    (associations.length === 0 && !INSIDERS.has(author));
  return { author: fork ? "none" : author, fork, outsider };
}
