import type { Queryable } from "./queryable.ts";

export interface NoteRow {
  id: string;
  invocation_id: string | null;
  pipeline: string | null;
  subject: string | null;
  body: string;
  created_at: Date;
}

export async function insertNote(
  db: Queryable,
  row: {
    id: string;
    invocationId: string | null;
    pipeline: string | null;
    subject: string | null;
    body: string;
  },
): Promise<void> {
  await db.query(
    "INSERT INTO svc.notes (id, invocation_id, pipeline, subject, body) VALUES ($1, $2, $3, $4, $5)",
    [row.id, row.invocationId, row.pipeline, row.subject, row.body],
  );
}

export async function listNotes(db: Queryable, pipeline: string): Promise<NoteRow[]> {
  const { rows } = await db.query<NoteRow>(
    "SELECT * FROM svc.notes WHERE pipeline = $1 ORDER BY created_at DESC, id",
    [pipeline],
  );
  return rows;
}
