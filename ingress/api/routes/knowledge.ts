import { askRoute, knowledgeRoute } from "../handlers/knowledge.ts";
import { getNoteRoute, listNotesRoute } from "../handlers/notes.ts";
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
      "notes kept by agents and imports, newest first; filters pipeline, agent, repo, tag, q, limit (every owner's)",
    handler: listNotesRoute,
  },
  {
    method: "GET",
    path: "/notes/:id",
    scope: "workloads:read",
    summary: "one note (not_…)",
    handler: getNoteRoute,
  },
];
