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

/** The workload an invocation belongs to: an orchestrated task knows only its invocation. */
/** An invocation's workload, and whether the invocation runs the pipeline's shadow candidate. */
export async function workloadOfInvocation(
  db: Queryable,
  invocationId: string,
): Promise<(WorkloadRow & { shadow: boolean }) | undefined> {
  const { rows } = await db.query<WorkloadRow & { shadow: boolean }>(
    "SELECT w.*, i.shadow FROM svc.workloads w JOIN svc.invocations i ON i.workload_id = w.id WHERE i.id = $1",
    [invocationId],
  );
  return rows[0];
}
