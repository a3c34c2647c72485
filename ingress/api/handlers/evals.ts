import {
  deleteEvalCase,
  type EvalCasePatch,
  getEvalCase,
  insertEvalCase,
  listEvalCases,
  type Outcome,
  readFinishedRun,
  updateEvalCase,
} from "../../../db/eval-cases.ts";
import { startEvalRun } from "../../../db/eval-runs.ts";
import { isIdOf } from "../../../shared/ids.ts";
import { ok } from "../context.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, pathParam, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";
import { pipelineNamed } from "./firing.ts";

/**
 * Curated eval cases (`evals:write`): a finished invocation marked with the outcome the team
 * expected, and `POST /evals/run`, which replays cases through the pipeline as configured now.
 */
const OUTCOMES: readonly Outcome[] = ["pass", "fail"];
const MAX_TAGS = 20;
const MAX_NOTES = 10_000;
const MAX_RUN_CASES = 500;

function outcome(value: unknown, field: string): Outcome {
  if (typeof value !== "string" || !OUTCOMES.includes(value as Outcome))
    throw badRequest(`"${field}" must be "pass" or "fail"`);
  return value as Outcome;
}

function tags(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_TAGS)
    throw badRequest(`"tags" must be a list of at most ${MAX_TAGS} tags`);
  for (const tag of value)
    if (typeof tag !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(tag))
      throw badRequest(`"tags": each tag is 1-64 letters, digits, _ . : or - (got ${JSON.stringify(tag)})`);
  return [...new Set(value as string[])];
}

function notes(value: unknown): string {
  if (typeof value !== "string" || value.length > MAX_NOTES)
    throw badRequest(`"notes" must be text of at most ${MAX_NOTES} characters`);
  return value;
}

function expectedResult(value: unknown): Record<string, unknown> | null {
  if (value === null) return null;
  if (typeof value !== "object" || Array.isArray(value))
    throw badRequest('"expectedResult" must be an object of result fields the run must return, or null');
  return value as Record<string, unknown>;
}

/** `POST /evals`: `{ invocation, expected, expectedResult?, notes?, tags? }` → 201 with the case. */
export async function createEvalRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["invocation", "expected", "expectedResult", "notes", "tags"]);
  if (typeof body.invocation !== "string" || !isIdOf("invocation", body.invocation))
    throw badRequest('"invocation" must be an invocation id (inv_…) of a finished run');
  const expected = outcome(body.expected, "expected");
  const run = await readFinishedRun(ctx.deps.pool, body.invocation);
  if (!run) throw notFound("invocation");
  if (run.status !== "completed" && run.status !== "failed")
    throw conflict(
      "invocation_not_finished",
      `invocation ${run.invocationId} is ${run.status}; only a completed or failed run can become an eval case`,
    );
  const { eventKind, eventSource, eventName } = run;
  if (eventKind === null || eventSource === null || eventName === null)
    throw conflict(
      "invocation_without_event",
      `invocation ${run.invocationId} was submitted to a workload, not fired by an event, so there is no event to replay; curate a triggered run`,
    );
  const created = await insertEvalCase(ctx.deps.pool, {
    run: { ...run, eventKind, eventSource, eventName },
    observed: run.status === "completed" ? "pass" : "fail",
    expected,
    expectedResult: body.expectedResult === undefined ? null : expectedResult(body.expectedResult),
    notes: body.notes === undefined ? "" : notes(body.notes),
    tags: body.tags === undefined ? [] : tags(body.tags),
    createdBy: ctx.principal.owner,
  });
  ctx.deps.logger.info("eval case curated", { event: "api.eval_curated", eval: created.id });
  return ok({ eval: created }, 201);
}

/** `GET /evals`: newest first; filters pipeline, tag, outcome (the expected one), limit. */
export async function listEvalsRoute(ctx: RouteContext): Promise<Reply> {
  const expected = queryString(ctx.req, "outcome");
  const evals = await listEvalCases(ctx.deps.pool, {
    pipeline: queryString(ctx.req, "pipeline"),
    tag: queryString(ctx.req, "tag"),
    ...(expected === undefined ? {} : { expected: outcome(expected, "outcome") }),
    limit: queryInt(ctx.req, "limit", 100, 1, 1000),
  });
  return ok({ evals });
}

function caseId(ctx: RouteContext): string | undefined {
  const id = pathParam(ctx.req, "id");
  return isIdOf("evalCase", id) ? id : undefined;
}

/** `GET /evals/:id`. */
export async function getEvalRoute(ctx: RouteContext): Promise<Reply> {
  const id = caseId(ctx);
  const found = id ? await getEvalCase(ctx.deps.pool, id) : undefined;
  if (!found) throw notFound("eval case");
  return ok({ eval: found });
}

/** `PATCH /evals/:id`: `{ expected?, expectedResult?, notes?, tags? }`; the copied run never changes. */
export async function patchEvalRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["expected", "expectedResult", "notes", "tags"]);
  const patch: EvalCasePatch = {};
  if (body.expected !== undefined) patch.expected = outcome(body.expected, "expected");
  if (body.expectedResult !== undefined) patch.expectedResult = expectedResult(body.expectedResult);
  if (body.notes !== undefined) patch.notes = notes(body.notes);
  if (body.tags !== undefined) patch.tags = tags(body.tags);
  const id = caseId(ctx);
  const updated = id ? await updateEvalCase(ctx.deps.pool, id, patch) : undefined;
  if (!updated) throw notFound("eval case");
  return ok({ eval: updated });
}

/** `DELETE /evals/:id` → 204. Eval runs that replayed it keep their triggers and runs. */
export async function deleteEvalRoute(ctx: RouteContext): Promise<Reply> {
  const id = caseId(ctx);
  if (!id || !(await deleteEvalCase(ctx.deps.pool, id))) throw notFound("eval case");
  return ok("", 204);
}

/**
 * `POST /evals/run`: `{ pipeline, cases?, tag? }` replays the pipeline's curated cases (all, the
 * listed ids, or those with the tag) through the pipeline as configured now → 202 with the eval
 * run, its triggers and the cohorts that compare it with the cases' original runs.
 */
export async function runEvalsRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["pipeline", "cases", "tag"]);
  if (typeof body.pipeline !== "string" || !body.pipeline)
    throw badRequest('"pipeline" (a pipeline name) is required');
  const pipeline = pipelineNamed(ctx, body.pipeline);
  const wanted = body.cases === undefined ? undefined : caseIds(body.cases);
  const tag = body.tag === undefined ? undefined : tags([body.tag])[0];
  const selected = await listEvalCases(ctx.deps.pool, {
    pipeline: pipeline.name,
    ...(tag ? { tag } : {}),
    ...(wanted ? { ids: wanted } : {}),
    limit: MAX_RUN_CASES,
  });
  if (wanted) {
    const missing = wanted.filter((id) => !selected.some((found) => found.id === id));
    if (missing.length)
      throw badRequest(
        `no curated case of pipeline ${pipeline.name}${tag ? ` tagged ${tag}` : ""} has the id ${missing.join(", ")}; list them with GET /evals?pipeline=${pipeline.name}`,
      );
  }
  if (!selected.length)
    throw badRequest(
      `pipeline ${pipeline.name} has no curated cases${tag ? ` tagged ${tag}` : ""}; curate one with POST /evals { invocation, expected }`,
    );
  const run = await startEvalRun(ctx.deps.pool, ctx.deps.boss, {
    pipeline: pipeline.name,
    pipelineVersion: pipeline.version,
    owner: ctx.principal.owner,
    cases: selected,
  });
  ctx.deps.logger.info("eval run started", {
    event: "api.eval_run",
    eval_run: run.id,
    pipeline: pipeline.name,
    cases: run.cases.length,
  });
  const compare = `/evals/compare?pipeline=${encodeURIComponent(pipeline.name)}&a=original:${run.id}&b=run:${run.id}`;
  return ok({ evalRun: run, compare }, 202);
}

function caseIds(value: unknown): string[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_RUN_CASES ||
    !value.every((id) => typeof id === "string" && isIdOf("evalCase", id))
  )
    throw badRequest(`"cases" must be a list of 1-${MAX_RUN_CASES} eval case ids (evc_…)`);
  return [...new Set(value as string[])];
}
