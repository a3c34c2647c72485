import { z } from "zod";
import { getNote } from "../../../db/notes.ts";
import { type ToolDefinition, textResult } from "../tool.ts";
import { toolNoteReader } from "./search-notes.ts";

/**
 * `read_note`: one whole note by id. A note the caller may not read (another repository's, a
 * stranger's untrusted one, the team's for an outsider's run) answers exactly like a missing id,
 * so its existence does not leak.
 */
export const readNote: ToolDefinition = {
  name: "read_note",
  description: "Read one note in full by its id (not_…), as found by search_notes.",
  access: "read",
  input: z.object({ id: z.string().regex(/^not_[a-z2-7]+$/, "a note id such as not_abc123") }).strict(),
  async run(input, { principal, deps }) {
    const note = await getNote(deps.pool, (input as { id: string }).id, toolNoteReader(principal, true));
    if (!note) return textResult(`no note ${(input as { id: string }).id}`, true);
    // who decided a note's trust is the operators' business, not the agent's
    const { trust_decided_by: _by, trust_decided_at: _at, ...shown } = note;
    return textResult({ ...shown, created_at: note.created_at.toISOString() });
  },
};
