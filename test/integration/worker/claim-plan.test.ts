import { describe, expect, it } from "vitest";
import { countFailure } from "../../../db/circuit-breakers.ts";
import { claimRuns } from "../../../db/invocations.ts";
import { describeTestBed, queuedRunsOfOneTrigger } from "./helpers.ts";

/**
 * A lane claim of one run (one slot came free: the common case in a drain) runs a statement of its
 * own, by `id = $1`, which Postgres plans once per connection. By `id = ANY($1)` it planned the
 * claim again at every call, and that planning cost as much as the claim.
 */
describe("claimRuns: the one-run claim is planned once per connection", () => {
  const bed = describeTestBed();

  it("claims one run at a time on a generic plan, and still claims a batch by its ids", async () => {
    const { runs: ids } = await queuedRunsOfOneTrigger(bed, 12, '{"n":1}');
    const client = await bed.pool.connect();
    try {
      for (const id of ids.slice(0, 10)) {
        const [run] = await claimRuns(client, [id], "w", 60_000);
        expect(run?.invocation).toMatchObject({ id, status: "running", worker_id: "w", attempts: 1 });
        expect(run?.trigger).toMatchObject({ kind: "manual", payload: { n: 1 } });
        // a run claimed already is not claimed twice
        expect(await claimRuns(client, [id], "w2", 60_000)).toEqual([]);
      }
      const { rows } = await client.query<{ generic_plans: string; custom_plans: string }>(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'svc_claim_run'",
      );
      // Postgres tries five custom plans before it compares them with the generic one
      expect(Number(rows[0]?.custom_plans)).toBeLessThanOrEqual(5);
      expect(Number(rows[0]?.generic_plans)).toBeGreaterThanOrEqual(15);

      const batch = await claimRuns(client, ids.slice(10), "w", 60_000);
      expect(batch.map((run) => run.invocation.id).sort()).toEqual(ids.slice(10).sort());
    } finally {
      client.release();
    }
  });

  // the run's gate (worker/run/circuit-breaker.ts breakerHold) costs no statement of its own
  it("a claim reads its pipeline's circuit breaker: the time an open one closes, null when closed", async () => {
    const { runs: ids } = await queuedRunsOfOneTrigger(bed, 2);
    const client = await bed.pool.connect();
    try {
      const [closed] = await claimRuns(client, [ids[0]!], "w", 60_000);
      expect(closed?.breakerOpenUntil).toBeNull();
      const limits = { failures: 2, cooldownMs: 60_000 };
      await countFailure(client, "p", limits);
      const opening = await countFailure(client, "p", limits);
      expect(opening.opened).toBe(true);
      const [held] = await claimRuns(client, [ids[1]!], "w", 60_000);
      expect(held?.breakerOpenUntil).toEqual(opening.row.open_until);
    } finally {
      client.release();
    }
  });
});
