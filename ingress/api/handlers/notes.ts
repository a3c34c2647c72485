import { getNote, listNotes, type NoteRow } from "../../../db/notes.ts";
import { isIdOf } from "../../../shared/ids.ts";
import { ok } from "../context.ts";
import { notFound } from "../errors.ts";
import { pathParam, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * Notes are shared knowledge, not workloads: any caller with `workloads:read` reads every note,
 * whoever's run wrote it (the owner boundary does not apply; see docs/api.md).
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
    createdAt: note.created_at,
  };
}

/** `GET /notes`: newest first; filters pipeline, agent, repo, tag, q (every word), limit. */
export async function listNotesRoute(ctx: RouteContext): Promise<Reply> {
  const notes = await listNotes(ctx.deps.pool, {
    pipeline: queryString(ctx.req, "pipeline"),
    agent: queryString(ctx.req, "agent"),
    repo: queryString(ctx.req, "repo"),
    tag: queryString(ctx.req, "tag"),
    query: queryString(ctx.req, "q"),
    limit: queryInt(ctx.req, "limit", 50, 1, 500),
  });
  return ok({ notes: notes.map(shape) });
}

/** `GET /notes/:id`: one note. */
export async function getNoteRoute(ctx: RouteContext): Promise<Reply> {
  const id = pathParam(ctx.req, "id");
  const note = isIdOf("note", id) ? await getNote(ctx.deps.pool, id) : undefined;
  if (!note) throw notFound("note");
  return ok({ note: shape(note) });
}
