import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../../../shared/config/types.ts";
import { rewriteQuery } from "../../../shared/knowledge/rewrite.ts";
import { FakeChatApi } from "../../e2e/knowledge/fake-chat-api.ts";
import { captureLogger } from "../worker/helpers.ts";

describe("knowledge.retrieval.rewrite.targets: ordered failover to a search query", () => {
  const api = new FakeChatApi();
  const target = (name: string, key: string, timeoutMs = 2_000): Target => ({
    name,
    runtime: "openai",
    baseUrl: api.url,
    model: `m-${name}`,
    timeoutMs,
    credentials: [{ name: "k", secret: { kind: "inline", value: key } }],
  });
  const deps = (targets: Target[]) => ({
    targets: Object.fromEntries(targets.map((t) => [t.name, t])),
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
});
