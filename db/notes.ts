import { newId } from "../shared/ids.ts";
import { Conditions } from "./conditions.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Notes: what agents learned, written through the `submit_note` tool or imported from legacy notes
 * files. Retention never touches this table. A note belongs to its repository (`repo`, null for
 * the team's); an untrusted one (submitted by an outsider's run) reaches no other run until an
 * operator trusts it (NoteReader says who reads what).
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
  trusted: boolean;
  /** the operator who last set `trusted`, and when; null while nobody has */
  trust_decided_by: string | null;
  trust_decided_at: Date | null;
  created_at: Date;
  /** `note`, or `dismissal`: a finding a member dismissed, dropped from later reviews (worker/outputs/dismissals.ts) */
  kind: NoteKind;
  /** a dismissal's path and finding fingerprint; null for a note */
  path: string | null;
  fingerprint: string | null;
}

export type NoteKind = "note" | "dismissal";

export interface NewNote {
  invocationId: string | null;
  pipeline: string | null;
  agent?: string | null;
  repo?: string | null;
  title: string | null;
  body: string;
  tags?: string[];
  /** false for a note of an outsider's run; default true */
  trusted?: boolean;
  /** an imported file's content digest: the same file imported again is skipped */
  importDigest?: string;
  createdAt?: Date;
}

const COLUMNS =
  "id, invocation_id, pipeline, agent, repo, title, body, tags, trusted, trust_decided_by, trust_decided_at, created_at, kind, path, fingerprint";

/** The new note, or undefined when `importDigest` was imported before. */
export async function insertNote(
  db: Queryable,
  note: NewNote & { id?: string },
): Promise<NoteRow | undefined> {
  const { rows } = await db.query<NoteRow>(
    `INSERT INTO svc.notes (id, invocation_id, pipeline, agent, repo, title, body, tags, import_digest, created_at, trusted)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10, now()), $11)
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
      note.trusted ?? true,
    ],
  );
  return rows[0];
}

/**
 * Who reads notes. A run (its token) reads the notes of its own repository and the team's (repo
 * null), and of those only the trusted ones and its own: another repository's note, or a stranger's
 * untrusted one, does not exist for it. An outsider's run (`outsider`) reads its repository's
 * alone: the team's notes are the team's, not the repository's, and its prompt is a stranger's
 * text that could have it post them. An operator reads every repository's notes; listings leave
 * untrusted ones out unless `untrusted` asks for them.
 */
export type NoteReader =
  | { kind: "operator"; untrusted: boolean }
  | { kind: "run"; repo: string | null; invocation: string; outsider?: boolean };

function addReader(conditions: Conditions, reader: NoteReader): void {
  if (reader.kind === "operator") {
    if (!reader.untrusted) conditions.add((n) => `trusted = ${n}`, true);
    return;
  }
  // a run without a repository compares with null, which matches nothing: it reads the team's
  // notes only, and an outsider's run without one reads none
  if (reader.outsider) conditions.add((n) => `repo = ${n}`, reader.repo);
  else conditions.add((n) => `(repo IS NULL OR repo = ${n})`, reader.repo);
  conditions.add((n) => `(trusted OR invocation_id = ${n})`, reader.invocation);
}

export interface NoteFilter {
  pipeline?: string;
  agent?: string;
  repo?: string;
  tag?: string;
  kind?: NoteKind;
  /** words that must all appear in the title, body or tags (case-insensitive) */
  query?: string;
  limit?: number;
}

/** Newest first: the notes `reader` may read that match `filter`. */
export async function listNotes(
  db: Queryable,
  reader: NoteReader,
  filter: NoteFilter = {},
): Promise<NoteRow[]> {
  const conditions = new Conditions();
  const add = conditions.add.bind(conditions);
  addReader(conditions, reader);
  if (filter.pipeline) add((n) => `pipeline = ${n}`, filter.pipeline);
  if (filter.agent) add((n) => `agent = ${n}`, filter.agent);
  if (filter.repo) add((n) => `repo = ${n}`, filter.repo);
  if (filter.tag) add((n) => `${n} = ANY (tags)`, filter.tag);
  if (filter.kind) add((n) => `kind = ${n}`, filter.kind);
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

/** The note, or undefined when it does not exist or `reader` may not read it: the two look alike. */
export async function getNote(db: Queryable, id: string, reader: NoteReader): Promise<NoteRow | undefined> {
  const conditions = new Conditions();
  conditions.add((n) => `id = ${n}`, id);
  addReader(conditions, reader);
  const { rows } = await db.query<NoteRow>(
    `SELECT ${COLUMNS} FROM svc.notes ${conditions.where()}`,
    conditions.params,
  );
  return rows[0];
}

/** Sets whether a note is trusted, recording who decided; undefined when there is no such note. */
export async function setNoteTrust(
  db: Queryable,
  id: string,
  trusted: boolean,
  by: string,
): Promise<NoteRow | undefined> {
  const { rows } = await db.query<NoteRow>(
    `UPDATE svc.notes SET trusted = $2, trust_decided_by = $3, trust_decided_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, trusted, by],
  );
  return rows[0];
}

/** Deletes a note (a dismissal's removal lifts its suppression); false when there is none. */
export async function deleteNote(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query("DELETE FROM svc.notes WHERE id = $1", [id]);
  return (rowCount ?? 0) > 0;
}

/** A dismissed finding: the repository and path it was on, its fingerprint and its rule (first line). */
export interface Dismissal {
  repo: string;
  path: string;
  fingerprint: string | null;
  rule: string;
  /** the review thread it was judged from: each thread is judged once, even after its note is deleted */
  thread: string;
  /** why: "resolved without a change by @x", "answered \"won't fix\" by @x" */
  why: string;
  pipeline: string | null;
  invocationId: string | null;
}

/**
 * Records a dismissal once per thread: the note, or undefined when the thread was judged before
 * (also when that note was deleted since).
 */
export async function recordDismissal(db: Queryable, dismissal: Dismissal): Promise<NoteRow | undefined> {
  const id = newId("note");
  const { rows } = await db.query<NoteRow>(
    `WITH judged AS (
       INSERT INTO svc.dismissed_threads (thread_id, repo, note_id) VALUES ($1, $2, $3)
       ON CONFLICT (thread_id) DO NOTHING RETURNING thread_id)
     INSERT INTO svc.notes (id, invocation_id, pipeline, repo, title, body, tags, kind, path, fingerprint)
     SELECT $3, $4, $5, $2, $6, $7, '{dismissal}', 'dismissal', $8, $9 FROM judged
     RETURNING ${COLUMNS}`,
    [
      dismissal.thread,
      dismissal.repo,
      id,
      dismissal.invocationId,
      dismissal.pipeline,
      dismissal.rule,
      dismissalBody(dismissal.path, dismissal.why, dismissal.rule),
      dismissal.path,
      dismissal.fingerprint,
    ],
  );
  return rows[0];
}

/** A dismissal note's body: where, why (svc's own words) and the finding's rule. */
function dismissalBody(path: string, why: string, rule: string): string {
  return `Finding on ${path} dismissed (${why}): ${rule}`;
}

/**
 * The why of a dismissal note's body, as dismissalBody wrote it, without the path or the rule: the
 * pull request's file name and the model's words must not pass for svc's reason. Null when the
 * body is not one svc wrote (edited since).
 */
export function dismissalWhy(body: string, path: string | null): string | null {
  const prefix = `Finding on ${path ?? ""} dismissed (`;
  if (path === null || !body.startsWith(prefix)) return null;
  // a why ends at the first "): " (a login, svc's words and quoted dismissing words hold none)
  const end = body.indexOf("): ", prefix.length);
  return end < 0 ? null : body.slice(prefix.length, end);
}

/** The repository's dismissals: what later reviews of it drop. */
export async function dismissalsOf(
  db: Queryable,
  repo: string,
): Promise<{ path: string; fingerprint: string | null; rule: string }[]> {
  const { rows } = await db.query<{ path: string; fingerprint: string | null; title: string }>(
    "SELECT path, fingerprint, title FROM svc.notes WHERE kind = 'dismissal' AND repo = $1",
    [repo],
  );
  return rows.map((row) => ({ path: row.path, fingerprint: row.fingerprint, rule: row.title }));
}

/** Which of these review threads were judged dismissals before (their note kept or deleted since). */
export async function judgedThreads(db: Queryable, threadIds: string[]): Promise<Set<string>> {
  if (threadIds.length === 0) return new Set();
  const { rows } = await db.query<{ thread_id: string }>(
    "SELECT thread_id FROM svc.dismissed_threads WHERE thread_id = ANY($1::text[])",
    [threadIds],
  );
  return new Set(rows.map((row) => row.thread_id));
}
