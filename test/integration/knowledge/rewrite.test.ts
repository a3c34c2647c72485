import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../../../shared/config/types.ts";
import { REWRITE_BOUND_MS, rewriteQuery } from "../../../shared/knowledge/rewrite.ts";
import { ENDPOINT_COOLDOWN_FIRST_MS, EndpointCooldowns } from "../../../shared/models/endpoint-cooldowns.ts";
import { FakeChatApi } from "../../e2e/knowledge/fake-chat-api.ts";
import { freePort } from "../../support/free-port.ts";
import { captureLogger } from "../worker/helpers.ts";

describe("knowledge.retrieval.rewrite.targets: ordered failover to a search query", () => {
  const api = new FakeChatApi();
  const target = (name: string, key: string, timeoutMs = 2_000, baseUrl = api.url): Target => ({
    name,
    runtime: "openai",
    baseUrl,
    model: `m-${name}`,
    timeoutMs,
    credentials: [{ name: "k", secret: { kind: "inline", value: key } }],
  });
  const deps = (targets: Target[], endpoints = new EndpointCooldowns()) => ({
    targets: Object.fromEntries(targets.map((t) => [t.name, t])),
    endpoints,
    keyOf: (name: string) => {
      const secret = targets.find((t) => t.name === name)?.credentials[0]?.secret;
      return secret?.kind === "inline" ? secret.value : undefined;
    },
    logger: captureLogger().logger,
  });

  beforeAll(async () => {
    await api.start();
    api.on("k-500", { kind: "status", status: 500 });
    api.on("k-hang", { kind: "hang" });
    api.on("k-good", {
      kind: "answer",
      needle: "lost overnight",
      reply: "restore database backup\nextra line",
    });
  });
  afterAll(async () => {
    await api.stop();
  });

  it("the first target that answers gives the query; failing and slow targets are passed over in order", async () => {
    api.requests.length = 0;
    const targets = [target("broken", "k-500"), target("slow", "k-hang", 300), target("good", "k-good")];
    const result = await rewriteQuery(
      "The database was lost overnight, what now?",
      ["broken", "slow", "good"],
      deps(targets),
    );
    expect(result).toEqual({ query: "restore database backup", target: "good" });
    expect(api.keysSeen()).toEqual(["k-500", "k-hang", "k-good"]);
    expect(api.requests[2]!.prompt).toContain("The database was lost overnight");
  });

  it("when every target fails, the original text is the query", async () => {
    const targets = [target("broken", "k-500"), target("slow", "k-hang", 300)];
    const text = "How do I rotate a webhook secret?";
    expect(await rewriteQuery(text, ["broken", "slow"], deps(targets))).toEqual({ query: text });
    expect(await rewriteQuery(text, [], deps(targets))).toEqual({ query: text });
  });

  it("the whole rewrite waits at most REWRITE_BOUND_MS, whatever the targets' own time-outs", async () => {
    api.requests.length = 0;
    const targets = [target("stuck", "k-hang", 60_000), target("stuck-too", "k-hang", 60_000)];
    const text = "Which runbook covers a failed deploy?";
    const started = Date.now();
    expect(await rewriteQuery(text, ["stuck", "stuck-too"], deps(targets))).toEqual({ query: text });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(REWRITE_BOUND_MS - 50);
    expect(waited).toBeLessThan(REWRITE_BOUND_MS + 500);
    // the bound was spent on the first: the second is not asked after it
    expect(api.keysSeen()).toEqual(["k-hang"]);
  });

  it("a target that refuses connections is skipped until its cool-down ends, then probed by one caller", async () => {
    api.requests.length = 0;
    let now = 1_000_000;
    const endpoints = new EndpointCooldowns(() => now);
    const closed = `http://127.0.0.1:${await freePort()}/v1`;
    const down = target("down", "k-good", 2_000, closed);
    const targets = [down, target("good", "k-good")];
    const { logger, lines } = captureLogger();
    const failed = () =>
      lines.map((line) => JSON.parse(line)).filter((line) => line.event === "knowledge.rewrite_failed");
    const d = { ...deps(targets, endpoints), logger };
    const text = "The database was lost overnight, what now?";
    // the first caller finds it refused and starts the cool-down
    expect(await rewriteQuery(text, ["down", "good"], d)).toEqual({
      query: "restore database backup",
      target: "good",
    });
    expect(failed()).toHaveLength(1);
    expect(failed()[0]).toMatchObject({ target: "down", error: "ECONNREFUSED" });
    expect(endpoints.isDown("down")).toBe(true);
    // the next callers skip it: no connection is tried (no second failure), the next target answers
    for (let i = 0; i < 3; i += 1)
      expect(await rewriteQuery(text, ["down", "good"], d)).toEqual({
        query: "restore database backup",
        target: "good",
      });
    expect(failed()).toHaveLength(1);
    // the cool-down over, one caller probes it (and fails again); the others still skip it meanwhile
    now += ENDPOINT_COOLDOWN_FIRST_MS;
    const probe = rewriteQuery(text, ["down"], d);
    expect(endpoints.admit("down").kind).toBe("skip");
    expect(await probe).toEqual({ query: text });
    expect(failed()).toHaveLength(2);
    expect(failed()[1].message).toContain(`skipping it for ${(2 * ENDPOINT_COOLDOWN_FIRST_MS) / 1000} s`);
  });

  it("a time-out that the bound cut short (earlier targets spent it) does not count against the target", async () => {
    const endpoints = new EndpointCooldowns();
    // the first gives up after its own 1.2 s; the second is left the bound's last 0.3 s of its 60 s
    const targets = [target("slow", "k-hang", 1_200), target("patient", "k-hang", 60_000)];
    const text = "Who approves a production deploy?";
    expect(await rewriteQuery(text, ["slow", "patient"], deps(targets, endpoints))).toEqual({ query: text });
    expect(endpoints.isDown("slow")).toBe(true);
    expect(endpoints.isDown("patient")).toBe(false);
  });
});
