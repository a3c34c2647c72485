import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage } from "../../integration/worker/helpers.ts";
import { waitFor } from "../../support/wait-for.ts";
import { agentRunning, REPO, type StickyBed, startStickyBed } from "./sticky-bed.ts";

/**
 * Issue 57, shadow versions: a pipeline's candidate version (`shadow.version_file`) runs on the
 * same event beside the live one, in its own invocation; the pull request gets exactly what the
 * live version posts, and the candidate's would-be review is recorded as its artifact.
 */
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
targets: [live-agent]
instructions: Review the pull request.
concurrency: { group: pull_request, cancel_in_progress: true }
shadow: { version_file: pipelines/review.next.yaml, share: 1 }
${OUTPUTS}`;
// the candidate: another version, another prompt and target; its own trigger is not read
const CANDIDATE = `version: 3.2.0-next.1
trigger:
  webhook: [review-hook]
targets: [next-agent]
instructions: Review the pull request, naming the risk first.
${OUTPUTS}`;

describe("a shadow version runs beside the live one and publishes nothing", () => {
  let bed: StickyBed;

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: ["live-agent", "next-agent"],
      pipelines: { review: LIVE, "review.next": CANDIDATE },
      hooks: ["review-hook"],
    });
  });

  afterAll(async () => {
    await bed?.close();
  });

  it("the pull request gets the live review only; the candidate's would-be review is recorded", async () => {
    const trigger = await bed.fire("review-hook", 7, "e".repeat(40));
    await agentRunning(bed.pool, trigger);
    await bed.release("live-agent", { review: { event: "COMMENT", body: "Live: looks fine." } });
    await bed.release("next-agent", { review: { event: "COMMENT", body: "Candidate: risky migration." } });
    await waitFor(async () => {
      const { rows } = await bed.pool.query("SELECT status FROM svc.triggers WHERE id = $1", [trigger]);
      return ["completed", "error"].includes(rows[0]?.status);
    }, "both runs to end");

    const { rows } = await bed.pool.query(
      `SELECT i.id, i.status, i.shadow, i.outputs_held, i.concurrency_group, w.pipeline, w.pipeline_version
         FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id
        WHERE w.trigger_id = $1 ORDER BY i.shadow`,
      [trigger],
    );
    expect(rows.map(({ id: _id, ...row }) => row)).toEqual([
      {
        status: "completed",
        shadow: false,
        outputs_held: false,
        concurrency_group: `pull_request:review:${REPO}#7`,
        pipeline: "review",
        pipeline_version: "3.1.0",
      },
      {
        status: "completed",
        shadow: true,
        outputs_held: true,
        concurrency_group: null,
        pipeline: "review",
        pipeline_version: "3.2.0-next.1",
      },
    ]);

    // exactly what the live version posts: one sticky comment, nothing of the candidate's anywhere
    const comments = bed.github.comments.get(`${REPO}#7`) ?? [];
    expect(comments.map((comment) => comment.body.split("\n")[0])).toEqual(["Live: looks fine."]);
    for (const request of bed.github.requests.filter((r) => r.method !== "GET"))
      expect(JSON.stringify(request.body ?? "")).not.toContain("Candidate");

    // the candidate's review, as it would have gone out, stamped with its own version
    const { artifacts } = await lineage(bed.pool, trigger);
    const held = artifacts.find((a) => a.invocation_id === rows[1].id && a.name === "held/outputs.md");
    expect(held?.rendered).toContain(`## outputs.review → ${REPO}#7 (codehost.review, sticky, COMMENT)`);
    expect(held?.rendered).toContain("Candidate: risky migration.");
    expect(held?.rendered).toContain(`review 3.2.0-next.1 · ${trigger}`);
  });

  it("the candidate's file is no pipeline of its own: its trigger fires nothing by itself", async () => {
    const { rows } = await bed.pool.query("SELECT DISTINCT pipeline FROM svc.workloads ORDER BY pipeline");
    expect(rows).toEqual([{ pipeline: "review" }]);
  });
});
