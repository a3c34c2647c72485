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

export async function getWorkload(db: Queryable, id: string): Promise<WorkloadRow | undefined> {
  const { rows } = await db.query<WorkloadRow>({
    name: "svc_get_workload",
    text: "SELECT * FROM svc.workloads WHERE id = $1",
    values: [id],
  });
  return rows[0];
}
