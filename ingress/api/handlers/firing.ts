import { recordTrigger } from "../../../db/record-trigger.ts";
import { fireSchedule } from "../../../db/schedules.ts";
import { getTrigger } from "../../../db/triggers.ts";
import { findSchedule } from "../../../shared/config/schedule.ts";
import type { Pipeline } from "../../../shared/config/types.ts";
import { ok } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, pathParam } from "../input.ts";
import { gateArgs } from "../pipeline-args.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * Firing, replay, URL dispatch and schedule run-now all become a trigger plus its dispatch job in
 * one transaction; the worker resolves a `manual` or `schedule` trigger to the pipeline named by
 * its `source`. The trigger's `owner` is the caller, so workloads it creates stay theirs.
 */
export function pipelineNamed(ctx: RouteContext, name: string): Pipeline {
  const pipeline = ctx.deps.config.pipelines[name];
  if (!pipeline) throw notFound("pipeline");
  return pipeline;
}

async function record(
  ctx: RouteContext,
  trigger: {
    kind: "manual" | "replay";
    source: string;
    eventName: string;
    payload: unknown;
    replayOf?: string;
  },
): Promise<Reply> {
  const { id } = await recordTrigger(ctx.deps.pool, ctx.deps.boss, {
    kind: trigger.kind,
    source: trigger.source,
    eventName: trigger.eventName,
    deliveryId: null,
    payloadJson: JSON.stringify(trigger.payload),
    owner: ctx.principal.owner,
    replayOf: trigger.replayOf ?? null,
  });
  ctx.deps.logger.info("trigger recorded", {
    event: "api.trigger_recorded",
    kind: trigger.kind,
    trigger: id,
  });
  return ok({ trigger: id }, 202);
}

export async function firePipelineRoute(ctx: RouteContext): Promise<Reply> {
  const pipeline = pipelineNamed(ctx, pathParam(ctx.req, "name"));
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["args"]);
  const args = gateArgs(pipeline, body.args);
  return record(ctx, {
    kind: "manual",
    source: pipeline.name,
    eventName: "manual",
    payload: { args, pipeline: pipeline.name },
  });
}

export async function replayTriggerRoute(ctx: RouteContext): Promise<Reply> {
  const original = await getTrigger(ctx.deps.pool, pathParam(ctx.req, "id"));
  if (!original) throw notFound("trigger");
  allowOnlyKeys(bodyObject(ctx.req), []);
  return record(ctx, {
    kind: "replay",
    source: original.source,
    eventName: original.eventName,
    payload: original.payload,
    replayOf: original.id,
  });
}

export async function dispatchUrlRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["pipeline", "url", "args"]);
  if (typeof body.pipeline !== "string" || !body.pipeline)
    throw badRequest('"pipeline" (a pipeline name) is required');
  if (typeof body.url !== "string") throw badRequest('"url" is required');
  let url: URL;
  try {
    url = new URL(body.url);
  } catch {
    throw badRequest('"url" must be an absolute http or https URL');
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw badRequest('"url" must be an http or https URL');
  if (url.username || url.password) throw badRequest('"url" must not carry credentials');
  const pipeline = pipelineNamed(ctx, body.pipeline);
  const args = gateArgs(pipeline, body.args);
  return record(ctx, {
    kind: "manual",
    source: pipeline.name,
    eventName: "dispatch",
    payload: { args, pipeline: pipeline.name, url: url.toString() },
  });
}

/**
 * Fires the named schedule now with its configured args: a trigger of kind `schedule` whose
 * `scheduled_for` is now. An unknown name answers exactly like an absent id.
 */
export async function runScheduleRoute(ctx: RouteContext): Promise<Reply> {
  const schedule = findSchedule(ctx.deps.config.pipelines, pathParam(ctx.req, "name"));
  if (!schedule) throw notFound("schedule");
  allowOnlyKeys(bodyObject(ctx.req), []);
  const { id } = await fireSchedule(
    ctx.deps.pool,
    ctx.deps.boss,
    schedule,
    { scheduledFor: new Date(), runNow: true },
    ctx.principal.owner,
  );
  ctx.deps.logger.info("trigger recorded", {
    event: "api.trigger_recorded",
    kind: "schedule",
    trigger: id,
    schedule: schedule.name,
  });
  return ok({ trigger: id }, 202);
}
