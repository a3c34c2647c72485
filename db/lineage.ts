import type { Diagnostic } from "../shared/diagnostics.ts";
import type { NewArtifact } from "./artifacts.ts";
import type { Queryable } from "./queryable.ts";
import type { TokenUsage } from "./tasks.ts";

/**
 * Lineage reads for `GET /trace/:id`: resolving an id prefix across the four traced kinds and
 * walking from any of them to the whole tree (trigger → workloads → invocations → tasks, artifacts).
 */

/** Kind prefixes `svc trace` accepts and the table each one lives in. */
export const TRACED_TABLES = {
  trg_: "svc.triggers",
  run_: "svc.workloads",
  inv_: "svc.invocations",
  tsk_: "svc.tasks",
} as const;
export type TracedPrefix = keyof typeof TRACED_TABLES;

/** Up to `limit` full ids starting with `prefix`; served by the `*_id_pattern` indexes. */
export async function findIdsByPrefix(db: Queryable, prefix: string, limit = 20): Promise<string[]> {
  const kind = prefix.slice(0, 4) as TracedPrefix;
  const table = TRACED_TABLES[kind];
  if (!table) return [];
  const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE id LIKE $1 ORDER BY id LIMIT $2`,
    [pattern, limit],
  );
  return rows.map((row) => row.id);
}

export interface LineageWorkload {
  id: string;
  triggerId: string | null;
  pipeline: string;
  owner: string | null;
  status: string;
  workspace: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface LineageInvocation {
  id: string;
  workloadId: string;
  status: string;
  diagnostic: Diagnostic | null;
  target: string | null;
  attempts: number;
  /** what retrieval gave the run (migration 040): method, method_used, delivery, query, sources */
  knowledge: Record<string, unknown> | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface LineageTask {
  id: string;
  invocationId: string;
  kind: string;
  name: string;
  seq: number;
  status: string;
  exitCode: number | null;
  diagnostic: Diagnostic | null;
  /** an agent attempt's tokens, when its runtime reported them */
  usage: TokenUsage | null;
  startedAt: Date;
  finishedAt: Date | null;
  /** an orchestrated task: the orchestrator's agent task that created it (the tree's edge) */
  parentId: string | null;
  /** where an orchestrated task ran (null for a run's own tasks) */
  target: string | null;
  attempts: number;
  durationMs: number | null;
  /** an orchestrated task's skill and principal binding */
  skill: string | null;
  principal: string | null;
}

/** An artifact as stored: what was written (NewArtifact) and when. */
export interface LineageArtifact extends NewArtifact {
  createdAt: Date;
}

export interface LineageRows {
  trigger: Record<string, unknown> | null;
  workloads: LineageWorkload[];
  invocations: LineageInvocation[];
  tasks: LineageTask[];
  artifacts: LineageArtifact[];
}

/** Column lists with the API's camelCase aliases, qualified by the alias `a` the caller gives the table. */
export function workloadColumns(a: string): string {
  return `${a}.id, ${a}.trigger_id AS "triggerId", ${a}.pipeline, ${a}.owner, ${a}.status, ${a}.workspace,
    ${a}.created_at AS "createdAt", ${a}.updated_at AS "updatedAt"`;
}

export function invocationColumns(a: string): string {
  return `${a}.id, ${a}.workload_id AS "workloadId", ${a}.status, ${a}.diagnostic, ${a}.target, ${a}.attempts,
    ${a}.knowledge, ${a}.started_at AS "startedAt", ${a}.finished_at AS "finishedAt", ${a}.created_at AS "createdAt",
    ${a}.updated_at AS "updatedAt"`;
}

export function artifactColumns(a: string): string {
  return `${a}.id, ${a}.invocation_id AS "invocationId", ${a}.task_id AS "taskId", ${a}.name,
    ${a}.media_type AS "mediaType", ${a}.size, ${a}.path, ${a}.rendered, ${a}.created_at AS "createdAt"`;
}

const TASK_COLUMNS = `t.id, t.invocation_id AS "invocationId", t.kind, t.name, t.seq, t.status, t.exit_code AS "exitCode",
  t.diagnostic, t.usage, t.started_at AS "startedAt", t.finished_at AS "finishedAt", t.parent_id AS "parentId", t.target,
  t.attempts, (extract(epoch FROM t.finished_at - t.started_at) * 1000)::int AS "durationMs",
  t.spec->>'skill' AS skill, t.spec->>'principal' AS principal`;

/**
 * The tree around a full id. From a trigger: all its workloads; from a workload: that workload;
 * from an invocation or task: its workload with only that invocation's branch.
 */
export async function readLineage(db: Queryable, id: string): Promise<LineageRows | undefined> {
  let triggerId: string | null = null;
  let workloadIds: string[] = [];
  let invocationFilter: string | null = null;
  if (id.startsWith("trg_")) {
    const { rowCount } = await db.query("SELECT 1 FROM svc.triggers WHERE id = $1", [id]);
    if (!rowCount) return undefined;
    triggerId = id;
    const { rows } = await db.query<{ id: string }>(
      "SELECT id FROM svc.workloads WHERE trigger_id = $1 ORDER BY created_at, id",
      [id],
    );
    workloadIds = rows.map((row) => row.id);
  } else {
    let workloadId: string | undefined;
    if (id.startsWith("run_")) workloadId = id;
    else if (id.startsWith("inv_")) {
      const { rows } = await db.query<{ workload_id: string }>(
        "SELECT workload_id FROM svc.invocations WHERE id = $1",
        [id],
      );
      workloadId = rows[0]?.workload_id;
      invocationFilter = id;
    } else if (id.startsWith("tsk_")) {
      const { rows } = await db.query<{ workload_id: string; invocation_id: string }>(
        `SELECT i.workload_id, t.invocation_id FROM svc.tasks t
           JOIN svc.invocations i ON i.id = t.invocation_id WHERE t.id = $1`,
        [id],
      );
      workloadId = rows[0]?.workload_id;
      invocationFilter = rows[0]?.invocation_id ?? null;
    }
    if (!workloadId) return undefined;
    const { rows } = await db.query<{ trigger_id: string | null }>(
      "SELECT trigger_id FROM svc.workloads WHERE id = $1",
      [workloadId],
    );
    if (!rows[0]) return undefined;
    triggerId = rows[0].trigger_id;
    workloadIds = [workloadId];
  }

  const trigger = triggerId
    ? ((
        await db.query(
          `SELECT id, kind, source, event_name AS "eventName", delivery_id AS "deliveryId", status, diagnostic,
                  owner, replay_of AS "replayOf", created_at AS "createdAt", updated_at AS "updatedAt", payload
             FROM svc.triggers WHERE id = $1`,
          [triggerId],
        )
      ).rows[0] ?? null)
    : null;
  const workloads = (
    await db.query<LineageWorkload>(
      `SELECT ${workloadColumns("w")} FROM svc.workloads w WHERE w.id = ANY($1) ORDER BY w.created_at, w.id`,
      [workloadIds],
    )
  ).rows;
  const invocations = (
    await db.query<LineageInvocation>(
      `SELECT ${invocationColumns("i")} FROM svc.invocations i
        WHERE i.workload_id = ANY($1) AND ($2::text IS NULL OR i.id = $2)
        ORDER BY i.created_at, i.id`,
      [workloadIds, invocationFilter],
    )
  ).rows;
  const invocationIds = invocations.map((row) => row.id);
  const tasks = (
    await db.query<LineageTask>(
      `SELECT ${TASK_COLUMNS} FROM svc.tasks t WHERE t.invocation_id = ANY($1) ORDER BY t.invocation_id, t.seq`,
      [invocationIds],
    )
  ).rows;
  const artifacts = (
    await db.query<LineageArtifact>(
      `SELECT ${artifactColumns("a")} FROM svc.artifacts a
        WHERE a.invocation_id = ANY($1) ORDER BY a.invocation_id, a.created_at, a.name`,
      [invocationIds],
    )
  ).rows.map((row) => ({ ...row, size: Number(row.size) }));
  return { trigger, workloads, invocations, tasks, artifacts };
}
