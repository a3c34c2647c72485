import type pg from "pg";
import { type LockedTrigger, recordTriggerAuthor } from "../../db/trigger-status.ts";
import {
  accessLevel,
  associationOfAccess,
  GitlabApiError,
  gitlabClient,
} from "../../shared/codehost/gitlab.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { isGitlabPayload } from "../event/context.ts";
import type { EstablishedAuthor, ResolvedEvent } from "../event/resolve.ts";
import { secretValue } from "../outputs/tokens.ts";
import { AnswerCache, withEstablished } from "./established.ts";

/**
 * Who wrote a GitLab event, as far as svc may trust: GitLab's webhook payloads carry no access
 * level, so dispatch asks the project's members API (`GET /projects/:id/members/all/:user_id`,
 * inherited memberships included) as the default code-host identity, and keeps the answer on the
 * trigger so the run, its retries and replays judge the same author. Answers are cached for a
 * minute per project and user: a busy merge request's pushes and notes ask once.
 */
const cache = new AnswerCache<EstablishedAuthor>();

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const id = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;

/**
 * The user an event's gates judge: a merge request's author for its own events (as GitHub judges a
 * pull request's), a note's writer, a push's pusher.
 */
export function gitlabAuthorId(payload: unknown): number | undefined {
  const body = obj(payload) ?? {};
  const attributes = obj(body.object_attributes);
  if (body.object_kind === "merge_request") return id(attributes?.author_id);
  if (body.object_kind === "note") return id(attributes?.author_id) ?? id(obj(body.user)?.id);
  return id(body.user_id) ?? id(obj(body.user)?.id);
}

export interface AuthorDeps {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
}

/**
 * The event with its author established, recorded on the trigger in the dispatch transaction. A
 * GitLab event svc cannot place (no `codehost.kind: gitlab` token, GitLab unreachable, no user in
 * the payload) is recorded as nothing and judged as a stranger's (fail closed).
 */
export async function withGitlabAuthor(
  deps: AuthorDeps,
  client: pg.ClientBase,
  trigger: Pick<LockedTrigger, "id" | "kind" | "author_association">,
  event: ResolvedEvent,
): Promise<ResolvedEvent> {
  if (event.author || trigger.author_association) return event;
  if (!["codehost", "webhook"].includes(event.kind) || !isGitlabPayload(event.payload)) return event;
  const association = await lookUp(deps, event);
  if (!association) return event;
  await recordTriggerAuthor(client, trigger.id, association);
  return withEstablished(event, { author: association });
}

async function lookUp(deps: AuthorDeps, event: ResolvedEvent): Promise<EstablishedAuthor | undefined> {
  const codehost = deps.config.codehost;
  const userId = gitlabAuthorId(event.payload);
  const project = event.context.repo;
  if (codehost?.kind !== "gitlab" || !codehost.token || userId === undefined || !project) {
    deps.logger.warn("a GitLab event's author cannot be established: judged as a stranger", {
      event: "gitlab.author_unknown",
      repo: project,
      why:
        codehost?.kind !== "gitlab" || !codehost.token
          ? "no codehost with kind: gitlab and a token to ask GitLab's members API with"
          : "the payload names no user",
    });
    return undefined;
  }
  const token = codehost.token;
  try {
    return await cache.get(`${codehost.apiUrl}\0${project}\0${userId}`, async () => {
      const client = gitlabClient({
        apiUrl: codehost.apiUrl,
        token: await secretValue(token, deps.pool, deps.config),
        brief: true,
      });
      return associationOfAccess(await accessLevel(client, project, userId));
    });
  } catch (error) {
    // unknown is a stranger: the event still dispatches, through the gates an outsider meets
    deps.logger.warn("GitLab's members API did not answer: the event's author is judged as a stranger", {
      event: "gitlab.author_unknown",
      repo: project,
      user: userId,
      ...(error instanceof GitlabApiError ? { status: error.status } : {}),
      message: error instanceof GitlabApiError ? error.hostMessage : (error as Error).message,
    });
    return undefined;
  }
}
