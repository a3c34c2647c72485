import { describe, expect, it } from "vitest";
import { countGatewayCost, registry, setCostRepos } from "../../../worker/metrics.ts";

async function samples(): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric("svc_gateway_cost_total")!.get();
  return Object.fromEntries(
    metric.values.map((value) => [`${value.labels.pipeline}|${value.labels.repo}`, value.value]),
  );
}

describe("svc_gateway_cost_total", () => {
  it('labels a cost with its repository only when daemon.yaml\'s repos names it; any other counts under repo=""', async () => {
    setCostRepos(["acme/widgets"]);
    countGatewayCost({ pipeline: "pr-review", repo: "acme/widgets" }, 0.25);
    countGatewayCost({ pipeline: "pr-review", repo: "someone/anything" }, 0.5);
    countGatewayCost({ pipeline: "pr-review", repo: null }, 0.125);
    countGatewayCost({ pipeline: "pr-review", repo: "acme/widgets" }, 0);
    expect(await samples()).toEqual({ "pr-review|acme/widgets": 0.25, "pr-review|": 0.625 });
  });

  it("without configured repos, no cost carries a repository", async () => {
    setCostRepos([]);
    countGatewayCost({ pipeline: "nightly", repo: "acme/widgets" }, 1);
    expect((await samples())["nightly|"]).toBe(1);
    expect((await samples())["nightly|acme/widgets"]).toBeUndefined();
  });
});
