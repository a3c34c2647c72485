import { findIdsByPrefix, type LineageArtifact, readLineage } from "../../../db/lineage.ts";
import { listDeliveries } from "../../../db/output-deliveries.ts";
import { ok } from "../context.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import { pathParam } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/** A kind prefix plus at least six id characters: the shortest input `svc trace` accepts. */
export const TRACE_ID = /^(trg|run|inv|tsk)_[a-z2-7]{6,}$/;
const MAX_CANDIDATES = 20;

/**
 * `GET /trace/:id` takes a full id or a unique prefix. An ambiguous prefix answers 409
 * `ambiguous_id` with the candidates; the answer carries `resolved`, the full id it traced.
 */
export async function traceRoute(ctx: RouteContext): Promise<Reply> {
  const input = pathParam(ctx.req, "id");
  if (!TRACE_ID.test(input)) {
    throw badRequest(
      "the id must be a kind prefix trg_, run_, inv_ or tsk_ followed by at least six lowercase id characters",
    );
  }
  const candidates = await findIdsByPrefix(ctx.deps.pool, input, MAX_CANDIDATES);
  const resolved = candidates.includes(input) ? input : candidates.length === 1 ? candidates[0]! : undefined;
  if (!resolved) {
    if (candidates.length === 0) throw notFound("record with that id or prefix");
    throw new ApiError(
      409,
      "ambiguous_id",
      `${input} matches ${candidates.length === MAX_CANDIDATES ? "at least " : ""}${candidates.length} records; give more characters`,
      {
        candidates,
      },
    );
  }
  const lineage = await readLineage(ctx.deps.pool, resolved);
  if (!lineage) throw notFound("record with that id or prefix");
  const artifacts: Record<
    string,
    { manifest: Omit<LineageArtifact, "rendered">[]; rendered: Record<string, string | null> }
  > = {};
  for (const invocation of lineage.invocations) artifacts[invocation.id] = { manifest: [], rendered: {} };
  for (const { rendered, ...entry } of lineage.artifacts) {
    const slot = artifacts[entry.invocationId];
    if (!slot) continue;
    slot.manifest.push(entry);
    slot.rendered[entry.name] = rendered;
  }
  return ok({
    resolved,
    trigger: lineage.trigger,
    workload: lineage.workloads[0] ?? null,
    workloads: lineage.workloads,
    invocations: lineage.invocations,
    tasks: lineage.tasks,
    artifacts,
    // outputs (issue 12): what each invocation published, and where
    deliveries: (
      await listDeliveries(
        ctx.deps.pool,
        lineage.invocations.map((row) => row.id),
      )
    ).map((row) => ({
      invocationId: row.invocation_id,
      key: row.output_key,
      handler: row.handler,
      status: row.status,
      url: row.remote_url,
      attempts: row.attempts,
      lastError: row.last_error,
    })),
  });
}
