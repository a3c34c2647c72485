import type { Queryable } from "./queryable.ts";

export type WorkloadStatus = "open" | "running" | "completed" | "error" | "discarded" | "closed";

export interface WorkloadRow {
  id: string;
  trigger_id: string | null;
  pipeline: string;
  owner: string | null;
  status: WorkloadStatus;
  workspace: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertWorkload(
  db: Queryable,
  row: { id: string; triggerId: string; pipeline: string; owner: string | null; workspace: string },
): Promise<void> {
  await db.query(
    `INSERT INTO svc.workloads (id, trigger_id, pipeline, owner, status, workspace)
     VALUES ($1, $2, $3, $4, 'open', $5)`,
    [row.id, row.triggerId, row.pipeline, row.owner, row.workspace],
  );
}

export async function getWorkload(db: Queryable, id: string): Promise<WorkloadRow | undefined> {
  const { rows } = await db.query<WorkloadRow>("SELECT * FROM svc.workloads WHERE id = $1", [id]);
  return rows[0];
}

export async function setWorkloadStatus(db: Queryable, id: string, status: WorkloadStatus): Promise<void> {
  await db.query("UPDATE svc.workloads SET status = $2, updated_at = now() WHERE id = $1", [id, status]);
}
