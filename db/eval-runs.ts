import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { newId } from "../shared/ids.ts";
import type { EvalCase } from "./eval-cases.ts";
import { recordTriggers } from "./record-trigger.ts";

/**
 * An eval run: curated cases re-fired through one pipeline as configured now. Each case becomes a
 * `replay` trigger whose `source` is the pipeline and whose `eval_run_id` names the run, so the
 * worker runs that pipeline alone on the case's event (worker/event/match.ts). The run, its
 * triggers, their case links and their dispatch jobs commit together or not at all.
 */
export interface EvalRun {
  id: string;
  pipeline: string;
  pipelineVersion: string;
  cases: { case: string; trigger: string }[];
}

export async function startEvalRun(
  pool: pg.Pool,
  boss: PgBoss,
  run: { pipeline: string; pipelineVersion: string; owner: string | null; cases: EvalCase[] },
): Promise<EvalRun> {
  const id = newId("evalRun");
  const triggers = await recordTriggers(
    pool,
    boss,
    run.cases.map((evalCase) => ({
      kind: "replay" as const,
      source: run.pipeline,
      eventName: evalCase.event.name,
      deliveryId: null,
      payloadJson: JSON.stringify(evalCase.event.payload),
      owner: run.owner,
    })),
    async (client, recorded) => {
      const triggerIds = recorded.map((trigger) => trigger.id);
      await client.query(
        "INSERT INTO svc.eval_runs (id, pipeline, pipeline_version, created_by) VALUES ($1, $2, $3, $4)",
        [id, run.pipeline, run.pipelineVersion, run.owner],
      );
      await client.query("UPDATE svc.triggers SET eval_run_id = $1 WHERE id = ANY($2::text[])", [
        id,
        triggerIds,
      ]);
      await client.query(
        `INSERT INTO svc.eval_run_cases (eval_run_id, case_id, trigger_id)
         SELECT $1, c, t FROM unnest($2::text[], $3::text[]) AS r(c, t)`,
        [id, run.cases.map((evalCase) => evalCase.id), triggerIds],
      );
    },
  );
  return {
    id,
    pipeline: run.pipeline,
    pipelineVersion: run.pipelineVersion,
    cases: run.cases.map((evalCase, index) => ({ case: evalCase.id, trigger: triggers[index]!.id })),
  };
}
