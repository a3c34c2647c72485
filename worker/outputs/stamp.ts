import type pg from "pg";
import { invocationSeal } from "../../db/marker-key.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import type { Stamp } from "./render.ts";

/** The stamp of one run's bodies: its pipeline's version, its origin, and its invocation's seal. */
export async function stampOf(
  pool: pg.Pool,
  run: { pipeline: Pick<Pipeline, "name" | "version">; origin: string; invocation: string },
): Promise<Stamp> {
  return {
    pipeline: run.pipeline.name,
    version: run.pipeline.version,
    origin: run.origin,
    invocation: run.invocation,
    seal: await invocationSeal(pool, run.invocation),
  };
}
