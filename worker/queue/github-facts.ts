import type pg from "pg";
import { type LockedTrigger, recordTriggerAuthor, recordTriggerPullHead } from "../../db/trigger-status.ts";
import {
  associationOfPermission,
  GithubReadError,
  githubReader,
  type PullHead,
  pullRequestHead,
  repositoryPermission,
} from "../../shared/codehost/github-reads.ts";
import type { CodehostCredential } from "../../shared/config/types.ts";
import { commentedPull, namedSender, needsSenderPermission } from "../event/authors.ts";
import { isGitlabPayload } from "../event/context.ts";
import type { EstablishedAuthor, ResolvedEvent } from "../event/resolve.ts";
import { identityToken } from "../outputs/tokens.ts";
import { AnswerCache, withEstablished } from "./established.ts";
import type { AuthorDeps } from "./gitlab-author.ts";

/**
 * What a GitHub event's payload cannot say and its gates and checkout need, asked of GitHub at
 * dispatch as the default code-host identity (`codehost.app`'s installation, else `codehost.token`)
 * and kept on the trigger, so the run, its retries and replays judge and check out the same thing:
 *
 * - the sender's repository permission (`GET /repos/{o}/{r}/collaborators/{user}/permission`) when
 *   no part of the payload states an `author_association` (a push, a `workflow_run`, a `check_suite`);
 * - the head and base of the pull request an `issue_comment` is on (`GET /repos/{o}/{r}/pulls/{n}`),
 *   which the comment does not state: a command is checked out and published against that commit.
 *
 * Nothing asked, or no answer, is recorded as nothing and judged as a stranger's (fail closed, see
 * worker/event/authors.ts). Permissions are cached for a minute per repository and user; a head
 * never is, since a push may move it between two comments.
 */
const permissions = new AnswerCache<EstablishedAuthor>();

export async function withGithubFacts(
  deps: AuthorDeps,
  client: pg.ClientBase,
  trigger: Pick<LockedTrigger, "id" | "author_association" | "pull_head">,
  event: ResolvedEvent,
): Promise<ResolvedEvent> {
  if (!["codehost", "webhook"].includes(event.kind) || isGitlabPayload(event.payload)) return event;
  const repo = event.context.repo;
  const sender = namedSender(event.payload);
  const askAuthor =
    !event.author && !trigger.author_association && needsSenderPermission(event.payload) && sender;
  const number = commentedPull(event.payload);
  const askHead = !event.head && !trigger.pull_head && number !== undefined;
  if (!askAuthor && !askHead) return event;
  const reader = await readerFor(deps, repo);
  if (typeof reader === "string") {
    unplaced(deps, repo, reader);
    return event;
  }
  let author: EstablishedAuthor | undefined;
  let head: PullHead | undefined;
  if (askAuthor) {
    author = await permissions
      .get(`${reader.apiUrl}\0${repo.toLowerCase()}\0${sender.toLowerCase()}`, async () =>
        associationOfPermission(await repositoryPermission(reader.client, repo, sender)),
      )
      .catch((error: unknown) => unplaced(deps, repo, failure(error), { user: sender }));
    if (author) await recordTriggerAuthor(client, trigger.id, author);
  }
  if (askHead) {
    head = await pullRequestHead(reader.client, repo, number).catch((error: unknown) =>
      unplaced(deps, repo, failure(error), { number }),
    );
    if (head) await recordTriggerPullHead(client, trigger.id, head);
  }
  return author || head
    ? withEstablished(event, { ...(author ? { author } : {}), ...(head ? { head } : {}) })
    : event;
}

/** The default code-host identity's GitHub reader for `repo`, or why there is none. */
export async function readerFor(
  deps: AuthorDeps,
  repo: string,
): Promise<{ client: ReturnType<typeof githubReader>; apiUrl: string } | string> {
  const codehost = deps.config.codehost;
  if (codehost?.kind === "gitlab") return "codehost.kind is gitlab: GitHub's API is not configured";
  const credential: CodehostCredential | undefined = codehost?.app
    ? { app: codehost.app }
    : codehost?.token
      ? { token: codehost.token }
      : undefined;
  if (!credential) return "no codehost.token or codehost.app to ask GitHub's API with";
  if (!/^[^/]+\/[^/]+$/.test(repo)) return "the payload names no owner/name repository";
  const apiUrl = codehost?.apiUrl ?? "https://api.github.com";
  try {
    const token = await identityToken(credential, repo, deps.pool, deps.config);
    return { client: githubReader({ apiUrl, token }), apiUrl };
  } catch (error) {
    return `the default code-host identity has no token for ${repo}: ${(error as Error).message}`;
  }
}

/** What a failed GitHub read says, for a log line or a diagnostic. */
export function failure(error: unknown): string {
  return error instanceof GithubReadError
    ? `GitHub answered ${error.status || "nothing"}: ${error.message}`
    : (error as Error).message;
}

function unplaced(
  deps: AuthorDeps,
  repo: string,
  why: string,
  about: Record<string, unknown> = {},
): undefined {
  deps.logger.warn("what a GitHub event's payload does not state could not be read: judged as a stranger's", {
    event: "github.author_unknown",
    repo,
    ...about,
    why,
  });
  return undefined;
}
