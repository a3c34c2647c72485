import { getNote, listNotes, type NoteRow, setNoteTrust } from "../../../db/notes.ts";
import { isIdOf } from "../../../shared/ids.ts";
import { noteReaderOf } from "../../auth/notes.ts";
import { ok } from "../context.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, pathParam, queryFlag, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * Notes are shared knowledge, not workloads: the owner boundary does not apply. Which notes a
 * caller reads is auth/notes.ts's: an operator every repository's (untrusted ones listed only with
 * `untrusted=1`), a run token its repository's and the team's (see docs/api.md).
 */
function shape(note: NoteRow) {
  return {
    id: note.id,
    title: note.title,
    body: note.body,
    tags: note.tags,
    pipeline: note.pipeline,
    agent: note.agent,
    repo: note.repo,
    invocation: note.invocation_id,
    trusted: note.trusted,
    trustDecidedBy: note.trust_decided_by,
    trustDecidedAt: note.trust_decided_at,
    createdAt: note.created_at,
  };
}

/** `GET /notes`: newest first; filters pipeline, agent, repo, tag, q (every word), limit, untrusted. */
export async function listNotesRoute(ctx: RouteContext): Promise<Reply> {
  const reader = noteReaderOf(ctx.principal, queryFlag(ctx.req, "untrusted"));
  const notes = await listNotes(ctx.deps.pool, reader, {
    pipeline: queryString(ctx.req, "pipeline"),
    agent: queryString(ctx.req, "agent"),
    repo: queryString(ctx.req, "repo"),
    tag: queryString(ctx.req, "tag"),
    query: queryString(ctx.req, "q"),
    limit: queryInt(ctx.req, "limit", 50, 1, 500),
  });
  return ok({ notes: notes.map(shape) });
}

/** The `:id` of a notes route, or undefined when it cannot be a note's id (answered as missing). */
function noteId(ctx: RouteContext): string | undefined {
  const id = pathParam(ctx.req, "id");
  return isIdOf("note", id) ? id : undefined;
}

/** `GET /notes/:id`: one note; one the caller may not read answers as a missing one. */
export async function getNoteRoute(ctx: RouteContext): Promise<Reply> {
  const id = noteId(ctx);
  const note = id ? await getNote(ctx.deps.pool, id, noteReaderOf(ctx.principal, true)) : undefined;
  if (!note) throw notFound("note");
  return ok({ note: shape(note) });
}

/**
 * `PATCH /notes/:id` with `{ "trusted": true }` gives an outsider's note to other runs (`false`
 * withdraws it again). The route's scope is `workloads:admin`, which no run token carries; a run
 * token is refused whatever its scopes, since trust is what a run must not grant itself.
 */
export async function patchNoteRoute(ctx: RouteContext): Promise<Reply> {
  if (ctx.principal.run)
    throw new ApiError(403, "forbidden", "a run's token cannot change whether a note is trusted");
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["trusted"]);
  if (typeof body.trusted !== "boolean")
    throw badRequest('"trusted" must be true (give the note to other runs) or false (withdraw it)');
  const id = noteId(ctx);
  const note = id ? await setNoteTrust(ctx.deps.pool, id, body.trusted, ctx.principal.owner) : undefined;
  if (!note) throw notFound("note");
  ctx.deps.logger.info(note.trusted ? "note trusted" : "note untrusted", {
    event: "api.note_trust",
    note: note.id,
    trusted: note.trusted,
    by: ctx.principal.owner,
  });
  return ok({ note: shape(note) });
}
