import { ensureLaneQueue, transactionDb, wakeWorkers } from "../../../db/boss.ts";
import { notifyInvocationCancelled } from "../../../db/invocations.ts";
import {
  cancelInvocation,
  closeWorkload,
  countActiveInvocations,
  createWorkload,
  findInvocation,
  findWorkload,
  insertQueuedInvocation,
  listInvocationArtifacts,
  listWorkloadInvocations,
  listWorkloads,
} from "../../../db/owned-workloads.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { diagnostic } from "../../../shared/diagnostics.ts";
import { type InvocationJob, pipelineLane } from "../../../shared/queues.ts";
import { ok, viewerOf } from "../context.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, pathParam, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";
import { pipelineNamed } from "./firing.ts";

/**
 * Workload routes. Every lookup goes through the owner-bound queries, so another owner's workload
 * or invocation takes the same `notFound` path as an absent id and the answers are byte-identical.
 */

const WORKLOAD_STATUSES = ["open", "running", "completed", "error", "discarded", "closed"];

export async function createWorkloadRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["pipeline"]);
  if (typeof body.pipeline !== "string" || !body.pipeline)
    throw badRequest('"pipeline" (a pipeline name) is required');
  const pipeline = pipelineNamed(ctx, body.pipeline);
  const workload = await createWorkload(ctx.deps.pool, {
    pipeline: pipeline.name,
    owner: ctx.principal.owner,
  });
  return ok({ workload }, 201);
}

export async function listWorkloadsRoute(ctx: RouteContext): Promise<Reply> {
  const status = queryString(ctx.req, "status");
  if (status !== undefined && !WORKLOAD_STATUSES.includes(status)) {
    throw badRequest(`status must be one of ${WORKLOAD_STATUSES.join(", ")}`);
  }
  const limit = queryInt(ctx.req, "limit", 50, 1, 500);
  const workloads = await listWorkloads(ctx.deps.pool, viewerOf(ctx.principal), {
    ...(status ? { status } : {}),
    limit,
  });
  return ok({ workloads });
}

export async function getWorkloadRoute(ctx: RouteContext): Promise<Reply> {
  const workload = await findWorkload(ctx.deps.pool, viewerOf(ctx.principal), pathParam(ctx.req, "id"));
  if (!workload) throw notFound("workload");
  const invocations = await listWorkloadInvocations(ctx.deps.pool, workload.id);
  return ok({ workload, invocations });
}

export async function closeWorkloadRoute(ctx: RouteContext): Promise<Reply> {
  allowOnlyKeys(bodyObject(ctx.req), []);
  const id = pathParam(ctx.req, "id");
  const workload = await withTransaction(ctx.deps.pool, async (client) => {
    const found = await findWorkload(client, viewerOf(ctx.principal), id, { forUpdate: true });
    if (!found) throw notFound("workload");
    if (found.status === "closed") return found;
    if (found.status !== "open" && found.status !== "running") {
      throw conflict(
        "workload_finished",
        `the workload is ${found.status}; only open or running workloads close`,
      );
    }
    const active = await countActiveInvocations(client, found.id);
    if (active > 0) {
      throw conflict(
        "workload_busy",
        `the workload has ${active} queued or running invocation(s); cancel them first`,
      );
    }
    return closeWorkload(client, found.id);
  });
  return ok({ workload });
}

export async function submitInvocationRoute(ctx: RouteContext): Promise<Reply> {
  allowOnlyKeys(bodyObject(ctx.req), []);
  const id = pathParam(ctx.req, "id");
  const viewer = viewerOf(ctx.principal);
  const peek = await findWorkload(ctx.deps.pool, viewer, id);
  if (!peek) throw notFound("workload");
  const pipeline = ctx.deps.config.pipelines[peek.pipeline];
  // the lane rule the worker uses too; the ingress does not track credentials, so every target counts as usable
  const { queue: lane, target } = pipeline
    ? pipelineLane(pipeline, ctx.deps.config.targets)
    : { queue: "", target: null };
  if (!pipeline || !target) {
    throw conflict(
      "target_unavailable",
      `pipeline ${peek.pipeline} is not configured with a target any more`,
    );
  }
  // queue creation is DDL pg-boss runs on its own connection; it must exist before the transactional send
  await ensureLaneQueue(ctx.deps.boss, lane, ctx.deps.config.targets);
  const invocation = await withTransaction(ctx.deps.pool, async (client) => {
    const workload = await findWorkload(client, viewer, id, { forUpdate: true });
    if (!workload) throw notFound("workload");
    if (workload.status !== "open" && workload.status !== "running") {
      throw conflict("workload_closed", `the workload is ${workload.status}; submit to an open workload`);
    }
    const row = await insertQueuedInvocation(client, { workloadId: workload.id, target });
    const job: InvocationJob = { invocationId: row.id };
    await ctx.deps.boss.send(lane, job, { db: transactionDb(client) });
    return row;
  });
  // after the commit (see wakeWorkers): the lane's workers look at once
  wakeWorkers(ctx.deps.boss, lane);
  return ok({ invocation }, 202);
}

export async function getInvocationRoute(ctx: RouteContext): Promise<Reply> {
  const invocation = await findInvocation(ctx.deps.pool, viewerOf(ctx.principal), pathParam(ctx.req, "id"));
  if (!invocation) throw notFound("invocation");
  return ok({ invocation });
}

export async function cancelInvocationRoute(ctx: RouteContext): Promise<Reply> {
  allowOnlyKeys(bodyObject(ctx.req), []);
  const id = pathParam(ctx.req, "id");
  const invocation = await withTransaction(ctx.deps.pool, async (client) => {
    const found = await findInvocation(client, viewerOf(ctx.principal), id, { forUpdate: true });
    if (!found) throw notFound("invocation");
    if (found.status === "cancelled") return found;
    const cancelled = await cancelInvocation(
      client,
      found.id,
      diagnostic("cancelled", `cancelled through the daemon API by ${ctx.principal.owner}`),
    );
    if (!cancelled)
      throw conflict(
        "invocation_finished",
        `the invocation is ${found.status}; only queued or running ones cancel`,
      );
    return cancelled;
  });
  // after the commit: the worker running it stops now instead of at its next heartbeat
  await notifyInvocationCancelled(ctx.deps.pool, invocation.id).catch(() => {});
  return ok({ invocation });
}

export async function invocationArtifactsRoute(ctx: RouteContext): Promise<Reply> {
  const invocation = await findInvocation(ctx.deps.pool, viewerOf(ctx.principal), pathParam(ctx.req, "id"));
  if (!invocation) throw notFound("invocation");
  const artifacts = await listInvocationArtifacts(ctx.deps.pool, invocation.id);
  return ok({ invocation: invocation.id, artifacts });
}
