import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/wait-for.ts";
import { agentRunning, type StickyBed, startStickyBed } from "../outputs/sticky-bed.ts";

/**
 * Issue 57: shadow runs never delay the live run. A shadow waits on its target's shadow lane
 * (shared/queues.ts laneQueue), which the claim loop fetches only after the live lanes and the
 * dispatch queue. With one worker slot: the first event's live run holds the slot, its shadow is
 * queued; a second event arrives after it; when the slot comes free, the second event's live run
 * is taken before the first event's shadow, queued earlier on the same target.
 */
const AGENT = "reviewer-agent";
const OUTPUTS = `result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review, sticky: true }
`;
const LIVE = `trigger:
  webhook: [review-hook]
targets: [${AGENT}]
instructions: Review the pull request.
shadow: { version_file: pipelines/review.next.yaml, share: 1 }
${OUTPUTS}`;
// the candidate runs on the live version's own target: the two compete for the same lane's slot
const CANDIDATE = `version: 3.2.0-next.1
trigger:
  webhook: [review-hook]
targets: [${AGENT}]
instructions: Review the pull request, naming the risk first.
${OUTPUTS}`;
const REVIEW = { review: { event: "COMMENT", body: "Looks fine." } };

interface Run {
  id: string;
  trigger: string;
  shadow: boolean;
}

describe("a shadow run waits on its own lane, after every live run", { timeout: 180_000 }, () => {
  let bed: StickyBed;

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: [AGENT],
      pipelines: { review: LIVE, "review.next": CANDIDATE },
      hooks: ["review-hook"],
      concurrency: 1,
    });
  }, 120_000);

  afterAll(async () => {
    await bed?.close();
  });

  /** The run whose agent is running now, once it is not one of `done` (one slot: one at a time). */
  async function runningAgent(done: readonly string[]): Promise<Run> {
    return waitFor(async () => {
      const { rows } = await bed.pool.query<Run>(
        `SELECT i.id, w.trigger_id AS trigger, i.shadow FROM svc.tasks k
           JOIN svc.invocations i ON i.id = k.invocation_id JOIN svc.workloads w ON w.id = i.workload_id
          WHERE k.kind = 'agent' AND k.status = 'running' AND NOT i.id = ANY($1)`,
        [done],
      );
      return rows[0];
    }, "the next run's agent to start");
  }

  it("the live run of an event queued later is claimed before an earlier event's shadow", async () => {
    const first = await bed.fire("review-hook", 1, "a".repeat(40));
    await agentRunning(bed.pool, first);
    const ran: Run[] = [await runningAgent([])];
    expect(ran[0]).toMatchObject({ trigger: first, shadow: false });
    // the first event's shadow waits on its target's shadow lane, not the live one
    const { rows: jobs } = await bed.pool.query(
      `SELECT j.name FROM pgboss.job j JOIN svc.invocations i ON i.id = j.data->>'invocationId'
         JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = $1 AND i.shadow AND i.status = 'queued' AND j.state = 'created'`,
      [first],
    );
    expect(jobs).toEqual([{ name: `svc-lane-${AGENT}/shadow` }]);

    // the second event is recorded (its dispatch job committed) while the slot is still taken
    const second = await bed.fire("review-hook", 2, "b".repeat(40));
    for (let next = 0; next < 3; next += 1) {
      await bed.release(AGENT, REVIEW);
      ran.push(await runningAgent(ran.map((run) => run.id)));
    }
    await bed.release(AGENT, REVIEW);
    expect(ran.map(({ trigger, shadow }) => ({ trigger, shadow }))).toEqual([
      { trigger: first, shadow: false },
      { trigger: second, shadow: false },
      { trigger: first, shadow: true },
      { trigger: second, shadow: true },
    ]);
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        "SELECT count(*)::int AS n FROM svc.invocations WHERE id = ANY($1) AND status = 'completed'",
        [ran.map((run) => run.id)],
      );
      return rows[0]?.n === 4;
    }, "all four runs to complete");
  });
});
