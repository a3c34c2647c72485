import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { AgentCliRuntime } from "../../../shared/agent-clis/pins.ts";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import {
  filesContaining,
  type GatewayBed,
  HOOK_TOKEN,
  modelCalls,
  openGatewayBed,
  processesOf,
  type SeenProcess,
} from "../agents/gateway-bed.ts";
import { postWebhook } from "../worker/processes.ts";

const KEY = "sk-ant-api03-REAL-KEY-the-agent-must-never-hold-0001";
const SUMMARY = { summary: "done" };

/**
 * The attack: whatever runs as the agent's user (a prompt-injected agent with a shell, a tool it
 * runs, repository code it executes) reads the agent's environment, its command line and the
 * files of its run, looking for the model API key. While the model holds its first answer (the
 * run is live, every process of it up), the test looks where an attacker would: every process
 * whose working directory, environment or command line names the run, and every file under the
 * run's folder. The key is in none of them; the agent holds a gateway token instead, which the
 * gateway forwards only to the target's own base URL and which dies with the attempt.
 */
for (const runtime of ["claude-code", "codex"] as AgentCliRuntime[]) {
  describe(`hostile: the ${runtime} agent's key`, { timeout: 180_000 }, () => {
    let bed: GatewayBed;
    let release: () => void = () => {};

    beforeAll(async () => {
      bed = await openGatewayBed(
        runtime,
        inject("adminDatabaseUrl"),
        [{ name: "held", keys: [KEY] }],
        [{ hook: "held", targets: ["held"] }],
      );
      bed.fake.behave(KEY, { kind: "script", note: { title: "t", body: "b" }, result: SUMMARY });
      bed.fake.hold(KEY, new Promise<void>((resolve) => (release = resolve)));
    }, 600_000);

    afterAll(async () => {
      release();
      await bed?.stop();
    });

    it("no process or file of the live run holds the real key; the gateway forwards nowhere else, and its token dies with the attempt", async () => {
      const id = await postWebhook(bed.url, "held", HOOK_TOKEN, {});
      // the first model request is at the fake, unanswered: the agent is running
      await waitFor(async () => bed.fake.seen(KEY).length > 0 || undefined, "the first model request");
      const { workloads, invocations } = await lineage(bed.pool, id);
      const runRoot = join(bed.dir, "workspaces", workloads[0].id, invocations[0].id);
      const processes = await processesOf(runRoot);
      expect(processes.length, "the walk finds the run's processes").toBeGreaterThan(0);
      for (const p of processes) {
        expect(p.environ, `process ${p.pid} (${p.cmdline})`).not.toContain(KEY);
        expect(p.cmdline, `process ${p.pid}`).not.toContain(KEY);
      }
      expect(await filesContaining(join(bed.dir, "workspaces"), KEY)).toEqual([]);
      // the walk found the agent: the CLI runs with the gateway's token as its API key
      const agent = processes.find((p) => /(ANTHROPIC|OPENAI)_API_KEY=svcgw_/.test(p.environ));
      expect(agent, describeAll(processes)).toBeDefined();
      const token = /(?:ANTHROPIC|OPENAI)_API_KEY=(svcgw_[\w-]+)/.exec(agent!.environ)![1]!;

      // the live token, sent with a URL of the attacker's own (absolute-form): refused, nothing sent there
      const attacker = await listenAttacker();
      const path = runtime === "codex" ? "/v1/responses" : "/v1/messages";
      const detour = await send(bed.gatewayUrl, `${attacker.url}${path}`, token);
      expect(detour.status).toBe(404);
      expect(attacker.seen).toEqual([]);
      await attacker.close();

      release();
      const trigger = await waitForTrigger(bed.pool, id);
      expect(trigger.status).toBe("completed");
      // the key went to the model API, from the gateway, and nowhere near the agent
      expect(modelCalls(bed.fake, KEY).length).toBeGreaterThan(0);
      const { artifacts } = await lineage(bed.pool, id);
      for (const artifact of artifacts) expect(String(artifact.rendered ?? "")).not.toContain(KEY);
      expect(bed.worker.output.join("\n")).not.toContain(KEY);
      expect(await processesOf(runRoot)).toEqual([]);

      // after the attempt: the token is dead, answered 401 in the API's own error shape
      const before = bed.fake.requests.length;
      const late = await send(bed.gatewayUrl, path, token);
      expect(late.status).toBe(401);
      expect(JSON.parse(late.body)).toEqual(
        runtime === "codex"
          ? { error: expect.objectContaining({ type: "invalid_request_error", code: "invalid_api_key" }) }
          : { type: "error", error: expect.objectContaining({ type: "authentication_error" }) },
      );
      expect(bed.fake.requests.length).toBe(before);
    });
  });
}

function describeAll(processes: SeenProcess[]): string {
  return (
    processes.map((p) => `${p.pid} ${p.cmdline.replaceAll("\0", " ").slice(0, 120)}`).join("\n") || "none"
  );
}

/** A model request to the gateway at `gatewayUrl`, naming `path` in its request line as it is. */
function send(gatewayUrl: string, path: string, token: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(gatewayUrl);
  const body = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: hostname,
        port,
        method: "POST",
        path,
        headers: {
          "content-type": "application/json",
          "x-api-key": token,
          authorization: `Bearer ${token}`,
          "anthropic-version": "2023-06-01",
        },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", () =>
          resolve({ status: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** An HTTP server of the attacker's on loopback that records whatever reaches it. */
async function listenAttacker() {
  const seen: string[] = [];
  const server = createServer((incoming, outgoing) => {
    seen.push(`${incoming.method} ${incoming.url} ${JSON.stringify(incoming.headers)}`);
    outgoing.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}
