import type { Queryable } from "./queryable.ts";

export interface InvocationKnowledge {
  method: "bm25" | "hybrid" | "none";
  /** what ran: `hybrid` without vectors is recorded as `bm25` */
  method_used: "bm25" | "hybrid" | null;
  delivery: "prompt" | "file" | "search" | "browse";
  query?: string;
  sources: { path: string; line: number; score: number }[];
}

/** The knowledge a run was given, on its invocation row (`knowledge` column, migration 040). */
export async function recordInvocationKnowledge(
  db: Queryable,
  invocationId: string,
  knowledge: InvocationKnowledge,
): Promise<void> {
  // named: once per run, so each connection parses and plans it once
  await db.query({
    name: "svc_record_invocation_knowledge",
    text: knowledgeUpdate(1, 2),
    values: [invocationId, JSON.stringify(knowledge)],
  });
}

/** The record's update, the invocation id as `$id` and the record as `$record`: a task's start carries it (db/tasks.ts). */
export function knowledgeUpdate(id: number, record: number): string {
  return `UPDATE svc.invocations SET knowledge = $${record} WHERE id = $${id}`;
}

export async function getInvocationKnowledge(
  db: Queryable,
  invocationId: string,
): Promise<InvocationKnowledge | null> {
  const { rows } = await db.query<{ knowledge: InvocationKnowledge | null }>(
    "SELECT knowledge FROM svc.invocations WHERE id = $1",
    [invocationId],
  );
  return rows[0]?.knowledge ?? null;
}
