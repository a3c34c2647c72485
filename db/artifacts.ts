import type { Queryable } from "./queryable.ts";

export interface ArtifactRow {
  id: string;
  invocation_id: string;
  task_id: string | null;
  name: string;
  media_type: string;
  size: number;
  path: string | null;
  rendered: string | null;
  created_at: Date;
}

export interface NewArtifact {
  id: string;
  invocationId: string;
  taskId: string | null;
  name: string;
  mediaType: string;
  size: number;
  path: string | null;
  rendered: string | null;
}

/**
 * The artifact insert with its parameters numbered from `$first`, so a task's end can carry it in
 * the same statement (db/tasks.ts). A retried attempt writes the same artifact names again; the
 * newest file wins.
 */
export function artifactUpsert(
  row: NewArtifact,
  first: number,
  /** an SQL condition: the artifact is written only while it holds */
  onlyIf?: string,
): { text: string; values: unknown[] } {
  const n = (offset: number) => `$${first + offset}`;
  // typed: in INSERT … SELECT, Postgres does not take parameter types from the target columns
  const types = ["text", "text", "text", "text", "text", "bigint", "text", "text"];
  const columns = types.map((type, offset) => `${n(offset)}::${type}`).join(", ");
  return {
    text: `INSERT INTO svc.artifacts (id, invocation_id, task_id, name, media_type, size, path, rendered)
     ${onlyIf ? `SELECT ${columns} WHERE ${onlyIf}` : `VALUES (${columns})`}
     ON CONFLICT (invocation_id, name) DO UPDATE
       SET task_id = EXCLUDED.task_id, media_type = EXCLUDED.media_type, size = EXCLUDED.size,
           path = EXCLUDED.path, rendered = EXCLUDED.rendered, created_at = now()`,
    values: [row.id, row.invocationId, row.taskId, row.name, row.mediaType, row.size, row.path, row.rendered],
  };
}

export async function upsertArtifact(db: Queryable, row: NewArtifact): Promise<void> {
  const { text, values } = artifactUpsert(row, 1);
  await db.query(text, values);
}

/** Transcripts past retention lose their stored text too; the row stays so the lineage remains readable. */
export async function expireTranscripts(db: Queryable, olderThanDays: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE svc.artifacts SET rendered = NULL, path = NULL
      WHERE name = 'transcript' AND (rendered IS NOT NULL OR path IS NOT NULL)
        AND created_at < now() - make_interval(days => $1)`,
    [olderThanDays],
  );
  return rowCount ?? 0;
}
