import type { Diagnostic } from "../shared/diagnostics.ts";
import { newId } from "../shared/ids.ts";
import {
  artifactColumns,
  invocationColumns,
  type LineageArtifact,
  type LineageInvocation,
  type LineageWorkload,
  workloadColumns,
} from "./lineage.ts";
import { cancelOrchestratedTasks } from "./orchestrated-tasks.ts";
import type { Queryable } from "./queryable.ts";

/**
 * Workload access through the daemon API, with the owner boundary applied in SQL: a viewer that
 * does not cross the boundary finds another owner's rows exactly as it finds absent ids (not at all).
 */

export interface Viewer {
  owner: string;
  /** `workloads:admin` or `*`: sees every owner's workloads */
  crossOwner: boolean;
}

const WORKLOAD_COLUMNS = workloadColumns("w");
const INVOCATION_COLUMNS = invocationColumns("i");

function ownerClause(viewer: Viewer, params: unknown[]): string {
  if (viewer.crossOwner) return "TRUE";
  params.push(viewer.owner);
  return `w.owner = $${params.length}`;
}

export async function createWorkload(
  db: Queryable,
  row: { pipeline: string; owner: string },
): Promise<LineageWorkload> {
  const { rows } = await db.query<LineageWorkload>(
    `INSERT INTO svc.workloads AS w (id, trigger_id, pipeline, owner, status) VALUES ($1, NULL, $2, $3, 'open')
     RETURNING ${WORKLOAD_COLUMNS}`,
    [newId("workload"), row.pipeline, row.owner],
  );
  return rows[0]!;
}

export async function findWorkload(
  db: Queryable,
  viewer: Viewer,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<LineageWorkload | undefined> {
  const params: unknown[] = [id];
  const { rows } = await db.query<LineageWorkload>(
    `SELECT ${WORKLOAD_COLUMNS} FROM svc.workloads w WHERE w.id = $1 AND ${ownerClause(viewer, params)}
     ${options.forUpdate ? "FOR UPDATE" : ""}`,
    params,
  );
  return rows[0];
}

export async function listWorkloads(
  db: Queryable,
  viewer: Viewer,
  filter: { status?: string; limit: number },
): Promise<LineageWorkload[]> {
  const params: unknown[] = [];
  const clauses = [ownerClause(viewer, params)];
  if (filter.status) {
    params.push(filter.status);
    clauses.push(`w.status = $${params.length}`);
  }
  params.push(filter.limit);
  const { rows } = await db.query<LineageWorkload>(
    `SELECT ${WORKLOAD_COLUMNS} FROM svc.workloads w WHERE ${clauses.join(" AND ")}
      ORDER BY w.created_at DESC, w.id DESC LIMIT $${params.length}`,
    params,
  );
  return rows;
}

export async function countActiveInvocations(db: Queryable, workloadId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    "SELECT count(*) AS n FROM svc.invocations WHERE workload_id = $1 AND status IN ('queued', 'running')",
    [workloadId],
  );
  return Number(rows[0]?.n ?? 0);
}

export async function closeWorkload(db: Queryable, id: string): Promise<LineageWorkload> {
  const { rows } = await db.query<LineageWorkload>(
    `UPDATE svc.workloads w SET status = 'closed', updated_at = now() WHERE w.id = $1 RETURNING ${WORKLOAD_COLUMNS}`,
    [id],
  );
  return rows[0]!;
}

export async function listWorkloadInvocations(
  db: Queryable,
  workloadId: string,
): Promise<LineageInvocation[]> {
  const { rows } = await db.query<LineageInvocation>(
    `SELECT ${INVOCATION_COLUMNS} FROM svc.invocations i WHERE i.workload_id = $1 ORDER BY i.created_at, i.id`,
    [workloadId],
  );
  return rows;
}

export async function findInvocation(
  db: Queryable,
  viewer: Viewer,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<LineageInvocation | undefined> {
  const params: unknown[] = [id];
  const { rows } = await db.query<LineageInvocation>(
    `SELECT ${INVOCATION_COLUMNS} FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
      WHERE i.id = $1 AND ${ownerClause(viewer, params)} ${options.forUpdate ? "FOR UPDATE OF i" : ""}`,
    params,
  );
  return rows[0];
}

export async function insertQueuedInvocation(
  db: Queryable,
  row: { workloadId: string; target: string | null },
): Promise<LineageInvocation> {
  const { rows } = await db.query<LineageInvocation>(
    `INSERT INTO svc.invocations AS i (id, workload_id, status, target) VALUES ($1, $2, 'queued', $3)
     RETURNING ${INVOCATION_COLUMNS}`,
    [newId("invocation"), row.workloadId, row.target],
  );
  return rows[0]!;
}

/**
 * Only queued or running invocations cancel; the worker sees the status and stops. An orchestrated
 * invocation's unfinished tasks are cancelled with it, and the workers holding them kill them.
 */
export async function cancelInvocation(
  db: Queryable,
  id: string,
  diagnostic: Diagnostic,
): Promise<LineageInvocation | undefined> {
  const { rows } = await db.query<LineageInvocation>(
    `UPDATE svc.invocations i SET status = 'cancelled', diagnostic = $2, finished_at = now(), updated_at = now()
      WHERE i.id = $1 AND i.status IN ('queued', 'running')
      RETURNING ${INVOCATION_COLUMNS}`,
    [id, JSON.stringify(diagnostic)],
  );
  if (rows[0]) await cancelOrchestratedTasks(db, id, diagnostic);
  return rows[0];
}

export async function listInvocationArtifacts(
  db: Queryable,
  invocationId: string,
): Promise<LineageArtifact[]> {
  const { rows } = await db.query<LineageArtifact>(
    `SELECT ${artifactColumns("a")} FROM svc.artifacts a WHERE a.invocation_id = $1 ORDER BY a.created_at, a.name`,
    [invocationId],
  );
  return rows.map((row) => ({ ...row, size: Number(row.size) }));
}
