import { z } from "zod";
import { listNotes, type NoteFilter, type NoteReader } from "../../../db/notes.ts";
import { noteReaderOf } from "../../auth/notes.ts";
import type { Principal } from "../../auth/principal.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

const PREVIEW_CHARS = 280;

/**
 * Which notes a tool caller reads: auth/notes.ts's reader, narrowed for an outsider's run to its
 * repository's (db/notes.ts). A token without the worker's record counts as an outsider's.
 */
export function toolNoteReader(principal: Principal, untrusted: boolean): NoteReader {
  const reader = noteReaderOf(principal, untrusted);
  if (reader.kind !== "run") return reader;
  return { ...reader, outsider: principal.run?.outsider !== false };
}

/**
 * `search_notes`: notes whose title, body or tags contain every word of `query`, newest first,
 * among those the caller reads (a run: its repository's and the team's, an outsider's run its
 * repository's alone; never an untrusted note but its own). The filters narrow that set; none widens it.
 */
export const searchNotes: ToolDefinition = {
  name: "search_notes",
  description:
    "Search the notes earlier runs kept. Every word of `query` must appear; narrow with pipeline, agent, repo or tag. Read a whole note with read_note.",
  access: "read",
  input: z
    .object({
      query: z.string().max(500).optional().describe("words to look for"),
      pipeline: z.string().max(200).optional(),
      agent: z.string().max(200).optional(),
      repo: z.string().max(200).optional(),
      tag: z.string().max(64).optional(),
      limit: z.number().int().min(1).max(100).optional().describe("at most this many (default 20)"),
    })
    .strict(),
  async run(input, { principal, deps }) {
    const filter = input as NoteFilter;
    const notes = await listNotes(deps.pool, toolNoteReader(principal, false), {
      ...filter,
      limit: filter.limit ?? 20,
    });
    return textResult({
      notes: notes.map((note) => ({
        id: note.id,
        title: note.title,
        pipeline: note.pipeline,
        agent: note.agent,
        repo: note.repo,
        tags: note.tags,
        created_at: note.created_at.toISOString(),
        preview: note.body.length > PREVIEW_CHARS ? `${note.body.slice(0, PREVIEW_CHARS)}…` : note.body,
      })),
    });
  },
};
