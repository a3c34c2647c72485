import { describe, expect, it } from "vitest";
import { finishInvocation } from "../../../db/invocations.ts";
import { settleLockedTrigger } from "../../../db/trigger-status.ts";
import { describeTestBed, queuedRunsOfOneTrigger, waitFor } from "./helpers.ts";

/**
 * A run's end locks its trigger in the statement that writes the end (db/invocations.ts
 * finishInvocation), so the two last runs of one trigger, ending at once, settle it in turn: the
 * second waits for the first's commit and its settlement sees both ends.
 */
describe("the end of a run locks its trigger with it", () => {
  const bed = describeTestBed();

  /** A trigger with two runs, both held by worker `w`. */
  async function twoRunningRuns(): Promise<{ trigger: string; runs: string[] }> {
    const { trigger, runs } = await queuedRunsOfOneTrigger(bed, 2);
    await bed.pool.query("UPDATE svc.triggers SET status = 'running' WHERE id = $1", [trigger]);
    await bed.pool.query(
      "UPDATE svc.invocations SET status = 'running', worker_id = 'w', attempts = 1, heartbeat_at = now() WHERE id = ANY($1)",
      [runs],
    );
    return { trigger, runs };
  }

  it("the second of two ends at once waits for the first, and the trigger ends completed", async () => {
    const { trigger, runs } = await twoRunningRuns();
    const first = await bed.pool.connect();
    const second = await bed.pool.connect();
    try {
      const completed = { status: "completed", diagnostic: null, result: {} } as const;
      await first.query("BEGIN");
      expect(await finishInvocation(first, runs[0]!, "w", completed, trigger)).toBe(true);
      await second.query("BEGIN");
      const secondEnd = finishInvocation(second, runs[1]!, "w", completed, trigger);
      // the second end waits on the trigger's row lock the first end holds
      const waiting = await waitFor(async () => {
        const { rows } = await bed.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
          [(second as unknown as { processID: number }).processID],
        );
        return rows.length > 0 ? true : undefined;
      }, "the second run's end to wait for the trigger's lock");
      expect(waiting).toBe(true);
      // the first settles while the second run is still running (uncommitted): running
      await settleLockedTrigger(first, trigger);
      await first.query("COMMIT");
      expect(await secondEnd).toBe(true);
      await settleLockedTrigger(second, trigger);
      await second.query("COMMIT");
    } finally {
      first.release();
      second.release();
    }
    const { rows } = await bed.pool.query("SELECT status FROM svc.triggers WHERE id = $1", [trigger]);
    expect(rows[0].status).toBe("completed");
  });

  it("a run no longer held locks nothing and reports false", async () => {
    const { trigger, runs } = await twoRunningRuns();
    const client = await bed.pool.connect();
    try {
      await client.query("BEGIN");
      const ended = await finishInvocation(
        client,
        runs[0]!,
        "another-worker",
        { status: "completed", diagnostic: null },
        trigger,
      );
      expect(ended).toBe(false);
      // nobody holds the trigger's row: another session locks it at once
      const other = await bed.pool.connect();
      try {
        await other.query("BEGIN");
        const { rows } = await other.query("SELECT 1 FROM svc.triggers WHERE id = $1 FOR UPDATE NOWAIT", [
          trigger,
        ]);
        expect(rows).toHaveLength(1);
        await other.query("ROLLBACK");
      } finally {
        other.release();
      }
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    const { rows } = await bed.pool.query("SELECT status FROM svc.invocations WHERE id = $1", [runs[0]]);
    expect(rows[0].status).toBe("running");
  });

  /** the breaker row's version and lock: an updated row gets a new xmin, a locked one a new xmax */
  const breakerRow = async (pipeline: string) => {
    const { rows } = await bed.pool.query(
      "SELECT consecutive_failures, xmin::text || '/' || xmax::text AS version FROM svc.circuit_breakers WHERE pipeline = $1",
      [pipeline],
    );
    return rows[0] as { consecutive_failures: number; version: string } | undefined;
  };

  it("a completed end resets its pipeline's circuit breaker; a failed end leaves the count", async () => {
    const { trigger, runs } = await twoRunningRuns();
    await bed.pool.query(
      "INSERT INTO svc.circuit_breakers (pipeline, consecutive_failures) VALUES ('counted', 2)",
    );
    const diagnostic = { code: "agent_failed", message: "failed" };
    expect(
      await finishInvocation(bed.pool, runs[0]!, "w", { status: "failed", diagnostic }, trigger, "counted"),
    ).toBe(true);
    expect((await breakerRow("counted"))?.consecutive_failures).toBe(2);
    const completed = { status: "completed", diagnostic: null, result: {} } as const;
    expect(await finishInvocation(bed.pool, runs[1]!, "w", completed, trigger, "counted")).toBe(true);
    expect((await breakerRow("counted"))?.consecutive_failures).toBe(0);
  });

  it("a completed end with nothing counted neither locks nor writes the breaker: a pipeline's runs do not queue on its row", async () => {
    const { trigger, runs } = await twoRunningRuns();
    await bed.pool.query(
      "INSERT INTO svc.circuit_breakers (pipeline, consecutive_failures) VALUES ('healthy', 0)",
    );
    const holder = await bed.pool.connect();
    const client = await bed.pool.connect();
    try {
      // another run's end holds the row
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM svc.circuit_breakers WHERE pipeline = 'healthy' FOR UPDATE");
      const before = await breakerRow("healthy");
      await client.query("BEGIN");
      await client.query("SET LOCAL lock_timeout = '500ms'");
      const completed = { status: "completed", diagnostic: null, result: {} } as const;
      expect(await finishInvocation(client, runs[0]!, "w", completed, trigger, "healthy")).toBe(true);
      await client.query("COMMIT");
      expect(await breakerRow("healthy")).toEqual(before);
    } finally {
      await client.query("ROLLBACK").catch(() => {});
      await holder.query("ROLLBACK");
      client.release();
      holder.release();
    }
  });
});
