import { askRoute, knowledgeRoute } from "../handlers/knowledge.ts";
import { getNoteRoute, listNotesRoute, patchNoteRoute } from "../handlers/notes.ts";
import type { RouteSpec } from "../types.ts";

export const KNOWLEDGE_ROUTES: readonly RouteSpec[] = [
  {
    method: "POST",
    path: "/ask",
    scope: "knowledge:read",
    summary:
      "answer `{ question, targets?, method? }` from the knowledge with the first usable target; 503 lists each target's reason",
    handler: askRoute,
  },
  {
    method: "GET",
    path: "/knowledge",
    scope: "knowledge:read",
    summary: "the knowledge documents (path, title, size, indexed_at); `q` searches them (method, limit)",
    handler: knowledgeRoute,
  },

  {
    method: "GET",
    path: "/notes",
    scope: "workloads:read",
    summary:
      "notes kept by agents and imports, newest first; filters pipeline, agent, repo, tag, q, limit (every owner's); untrusted=1 adds untrusted notes; a run token reads its repository's and the team's only",
    handler: listNotesRoute,
    query: {
      pipeline: "a pipeline name",
      agent: "an agent name",
      repo: "owner/name",
      tag: "a tag",
      q: "words that must all appear",
      limit: "1-500, default 50",
      untrusted: "1 adds the untrusted notes (of outsiders' runs) awaiting PATCH /notes/:id",
    },
  },
  {
    method: "GET",
    path: "/notes/:id",
    scope: "workloads:read",
    summary:
      "one note (not_…), trusted or not; a note a run token may not read answers 404 like a missing one",
    handler: getNoteRoute,
  },
  {
    method: "PATCH",
    path: "/notes/:id",
    scope: "workloads:admin",
    summary:
      "`{ trusted: true }` gives an outsider's untrusted note to other runs (`false` withdraws it); never a run token",
    handler: patchNoteRoute,
    body: {
      type: "object",
      properties: { trusted: { type: "boolean" } },
      required: ["trusted"],
      additionalProperties: false,
    },
  },
];
