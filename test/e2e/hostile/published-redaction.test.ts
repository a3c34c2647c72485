import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage } from "../../integration/worker/helpers.ts";
import { waitFor } from "../../support/wait-for.ts";
import { CODEHOST_TOKEN, HOOK_TOKEN, REPO, type StickyBed, startStickyBed } from "../outputs/sticky-bed.ts";

/**
 * Issue 55, finding 6: artifacts were redacted, published outputs were not. An agent that reads a
 * secret the run holds (here the code-host identity's token, which the worker resolved) and writes
 * it into its result had it posted on the pull request, where anyone reads it. Every published body
 * now passes the run's redactor first.
 */
const PIPELINE = `trigger:
  webhook: [leak-hook]
targets: [leaky-agent]
instructions: Summarise the pull request.
result:
  schema:
    type: object
    properties:
      summary: { $ref: svc://schemas/codehost/comment/v1 }
      review: { $ref: svc://schemas/codehost/review/v1 }
outputs:
  summary: { handler: codehost.comment }
  review: { handler: codehost.review }
`;

describe("no secret the run holds is published", () => {
  let bed: StickyBed;

  beforeAll(async () => {
    bed = await startStickyBed({
      agents: ["leaky-agent"],
      pipelines: { leak: PIPELINE },
      hooks: ["leak-hook"],
    });
  });

  afterAll(async () => {
    await bed?.close();
  });

  it("a result quoting the code-host token and the hook secret is posted with both redacted", async () => {
    const trigger = await bed.fire("leak-hook", 5, "d".repeat(40));
    await bed.release("leaky-agent", {
      summary: { body: `Here is the token: ${CODEHOST_TOKEN}, and the hook's: ${HOOK_TOKEN}` },
      review: { event: "COMMENT", body: `token=${CODEHOST_TOKEN}` },
    });
    await waitFor(async () => {
      const run = (await lineage(bed.pool, trigger)).invocations[0];
      return run && run.status !== "running" && run.status !== "queued" ? run : undefined;
    }, "the run to end");
    const written = bed.github.requests.filter((request) => request.method !== "GET");
    expect(written.length).toBeGreaterThan(0);
    for (const request of written) {
      const text = JSON.stringify(request.body ?? "");
      expect(text).not.toContain(CODEHOST_TOKEN);
      expect(text).not.toContain(HOOK_TOKEN);
    }
    const [comment] = bed.github.comments.get(`${REPO}#5`) ?? [];
    expect(comment!.body).toContain("Here is the token: [redacted], and the hook's: [redacted]");
    const [review] = bed.github.reviews.get(`${REPO}#5`) ?? [];
    expect(review!.body).toContain("token=[redacted]");
  });
});
