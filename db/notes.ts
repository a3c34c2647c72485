import { newId } from "../shared/ids.ts";
import { Conditions } from "./conditions.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Notes: what agents learned, written through the `submit_note` tool or imported from legacy notes
 * files. Retention never touches this table.
 */
export interface NoteRow {
  id: string;
  invocation_id: string | null;
  pipeline: string | null;
  agent: string | null;
  repo: string | null;
  title: string | null;
  body: string;
  tags: string[];
  created_at: Date;
}

export interface NewNote {
  invocationId: string | null;
  pipeline: string | null;
  agent?: string | null;
  repo?: string | null;
  title: string | null;
  body: string;
  tags?: string[];
  /** an imported file's content digest: the same file imported again is skipped */
  importDigest?: string;
  createdAt?: Date;
}

const COLUMNS = "id, invocation_id, pipeline, agent, repo, title, body, tags, created_at";

/** The new note, or undefined when `importDigest` was imported before. */
export async function insertNote(
  db: Queryable,
  note: NewNote & { id?: string },
): Promise<NoteRow | undefined> {
  const { rows } = await db.query<NoteRow>(
    `INSERT INTO svc.notes (id, invocation_id, pipeline, agent, repo, title, body, tags, import_digest, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10, now()))
     ON CONFLICT (import_digest) WHERE import_digest IS NOT NULL DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      note.id ?? newId("note"),
      note.invocationId,
      note.pipeline,
      note.agent ?? null,
      note.repo ?? null,
      note.title,
      note.body,
      note.tags ?? [],
      note.importDigest ?? null,
      note.createdAt ?? null,
    ],
  );
  return rows[0];
}

export interface NoteFilter {
  pipeline?: string;
  agent?: string;
  repo?: string;
  tag?: string;
  /** words that must all appear in the title, body or tags (case-insensitive) */
  query?: string;
  limit?: number;
}

/** Newest first. */
export async function listNotes(db: Queryable, filter: NoteFilter = {}): Promise<NoteRow[]> {
  const conditions = new Conditions();
  const add = conditions.add.bind(conditions);
  if (filter.pipeline) add((n) => `pipeline = ${n}`, filter.pipeline);
  if (filter.agent) add((n) => `agent = ${n}`, filter.agent);
  if (filter.repo) add((n) => `repo = ${n}`, filter.repo);
  if (filter.tag) add((n) => `${n} = ANY (tags)`, filter.tag);
  for (const word of (filter.query ?? "").split(/\s+/).filter(Boolean)) {
    const pattern = `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    add((n) => `(title ILIKE ${n} OR body ILIKE ${n} OR array_to_string(tags, ' ') ILIKE ${n})`, pattern);
  }
  const limit = conditions.param(Math.min(Math.max(filter.limit ?? 50, 1), 500));
  const { rows } = await db.query<NoteRow>(
    `SELECT ${COLUMNS} FROM svc.notes ${conditions.where()} ORDER BY created_at DESC, id LIMIT ${limit}`,
    conditions.params,
  );
  return rows;
}

export async function getNote(db: Queryable, id: string): Promise<NoteRow | undefined> {
  const { rows } = await db.query<NoteRow>(`SELECT ${COLUMNS} FROM svc.notes WHERE id = $1`, [id]);
  return rows[0];
}
