import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentCliTarget } from "../../../shared/config/types.ts";
import { classifyResponse } from "../../../shared/credentials/classify.ts";
import { probeAgentCli } from "../../../worker/runtimes/agent-cli/probe.ts";
import { FakeAnthropic } from "./fake-anthropic.ts";
import { FakeResponses } from "./fake-responses.ts";

const SCRIPT = { kind: "script", note: { title: "t", body: "b" }, result: {} } as const;

/** A cooling agent CLI credential is probed against the model API its CLI talks to, as the CLI authenticates. */
describe("the cooling probe of claude-code and codex credentials", () => {
  const anthropic = new FakeAnthropic();
  const responses = new FakeResponses();

  beforeAll(async () => {
    await Promise.all([anthropic.start(), responses.start()]);
    for (const fake of [anthropic, responses]) {
      fake.behave("lifted", SCRIPT);
      fake.behave("capped", { kind: "error", status: 429, retryAfter: "30" });
      fake.behave("revoked", { kind: "error", status: 401 });
    }
  });

  afterAll(async () => {
    await Promise.all([anthropic.stop(), responses.stop()]);
  });

  const target = (runtime: AgentCliTarget["runtime"], baseUrl: string): AgentCliTarget => ({
    ...{ name: runtime, runtime, model: "m", baseUrl, timeoutMs: 5_000 },
    credentials: [],
  });

  it.each([
    ["claude-code", () => target("claude-code", anthropic.url), anthropic, "/v1/models"],
    ["codex", () => target("codex", `${responses.url}/v1`), responses, "/v1/models"],
  ] as const)(
    "%s: a lifted cap is ok, a 429 cools again, a 401 kills",
    async (_runtime, make, fake, path) => {
      const verdict = async (key: string) => {
        const response = await probeAgentCli(make(), key);
        return classifyResponse(response.status, response.headers, response.body).kind;
      };
      expect(await verdict("lifted")).toBe("ok");
      expect(await verdict("capped")).toBe("cooling");
      expect(await verdict("revoked")).toBe("dead");
      expect(fake.seen("lifted").map((request) => `${request.method} ${request.path}`)).toEqual([
        `GET ${path}`,
      ]);
    },
  );
});
