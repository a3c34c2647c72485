import { z } from "zod";
import { getNote } from "../../../db/notes.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/** `read_note`: one whole note by id. */
export const readNote: ToolDefinition = {
  name: "read_note",
  description: "Read one note in full by its id (not_…), as found by search_notes.",
  access: "read",
  input: z.object({ id: z.string().regex(/^not_[a-z2-7]+$/, "a note id such as not_abc123") }).strict(),
  async run(input, { deps }) {
    const note = await getNote(deps.pool, (input as { id: string }).id);
    if (!note) return textResult(`no note ${(input as { id: string }).id}`, true);
    return textResult({ ...note, created_at: note.created_at.toISOString() });
  },
};
