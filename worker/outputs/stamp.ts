import type pg from "pg";
import { runUsage } from "../../db/costs.ts";
import { invocationSeal } from "../../db/marker-key.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import type { Stamp } from "./render.ts";

/**
 * The stamp of one run's bodies: its pipeline's version, its origin, its invocation's seal, and
 * what its model calls used so far (read now, at publishing: the footer states the spend then).
 */
export async function stampOf(
  pool: pg.Pool,
  run: { pipeline: Pick<Pipeline, "name" | "version">; origin: string; invocation: string },
): Promise<Stamp> {
  const [seal, usage] = await Promise.all([
    invocationSeal(pool, run.invocation),
    runUsage(pool, run.invocation),
  ]);
  return {
    pipeline: run.pipeline.name,
    version: run.pipeline.version,
    origin: run.origin,
    invocation: run.invocation,
    seal,
    usage,
  };
}
