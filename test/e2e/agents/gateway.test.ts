import { execFile } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { renderTree } from "../../../cli/commands/trace.ts";
import type { AgentCliRuntime } from "../../../shared/agent-clis/pins.ts";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { postWebhook } from "../worker/processes.ts";
import { type GatewayBed, HOOK_TOKEN, modelCalls, openGatewayBed, processesOf } from "./gateway-bed.ts";

const NOTE = { title: "learned", body: "the gateway counted this", tags: ["e2e"] };
const SUMMARY = { summary: "done" };
const KEYS = {
  main: "sk-gw-main-0001",
  tokens: "sk-gw-tokens-0002",
  cost: "sk-gw-cost-0003",
  revoked: "sk-gw-revoked-0004",
  backup: "sk-gw-backup-0005",
};
/** every answer reports this much: 107 tokens, or 21 for the budgeted targets */
const USAGE = { input_tokens: 100, output_tokens: 7 };
const SMALL = { input_tokens: 20, output_tokens: 1 };

/**
 * The worker's model gateway with the real, pinned CLIs against the loopback model APIs: the CLI
 * gets a gateway token and the gateway's address, the fake sees the real key; usage is read from
 * the answers as they stream through; budgets stop the run at the first model request past them;
 * a 401 through the gateway kills the credential and the run fails over.
 */
for (const runtime of ["claude-code", "codex"] as AgentCliRuntime[]) {
  describe(`the model gateway with ${runtime}`, { timeout: 180_000 }, () => {
    let bed: GatewayBed;

    beforeAll(async () => {
      bed = await openGatewayBed(
        runtime,
        inject("adminDatabaseUrl"),
        [
          { name: "main", keys: [KEYS.main] },
          { name: "tok", keys: [KEYS.tokens] },
          // USD per million tokens: 21 tokens cost $0.21
          { name: "priced", keys: [KEYS.cost], extra: "    price: { input: 10000, output: 10000 }\n" },
          { name: "revoked", keys: [KEYS.revoked] },
          { name: "backup", keys: [KEYS.backup] },
        ],
        [
          { hook: "usage", targets: ["main"] },
          { hook: "tokens", targets: ["tok"], extra: "budget: { tokens: 15 }\n" },
          { hook: "cost", targets: ["priced"], extra: "budget: { cost: 0.2 }\n" },
          { hook: "dead", targets: ["revoked", "backup"] },
        ],
      );
      const script = { kind: "script", note: NOTE, result: SUMMARY } as const;
      bed.fake.behave(KEYS.main, { ...script, usage: USAGE });
      bed.fake.behave(KEYS.tokens, { ...script, usage: SMALL });
      bed.fake.behave(KEYS.cost, { ...script, usage: SMALL });
      bed.fake.behave(KEYS.revoked, { kind: "error", status: 401 });
      bed.fake.behave(KEYS.backup, script);
    }, 600_000);

    afterAll(async () => {
      await bed?.stop();
    });

    const fire = async (hook: string) => {
      const id = await postWebhook(bed.url, hook, HOOK_TOKEN, {});
      const trigger = await waitForTrigger(bed.pool, id);
      return { id, trigger, ...(await lineage(bed.pool, id)) };
    };

    it("the CLI talks to the gateway with a token of its own; the model API sees the real key; the usage it read is the task's, in svc trace, the trace page and /evals/stats", async () => {
      const run = await fire("usage");
      expect(run.trigger.status, JSON.stringify(run.invocations[0]?.diagnostic)).toBe("completed");
      const calls = modelCalls(bed.fake, KEYS.main);
      const n = calls.length;
      expect(n).toBeGreaterThanOrEqual(2); // the note's tool call, then the answer
      // no request reached the model API with anything but the real key
      for (const request of bed.fake.requests) expect(request.key).not.toMatch(/^svcgw_/);
      const agent = run.tasks.find((task) => task.kind === "agent");
      expect(agent.usage).toEqual({
        input_tokens: n * USAGE.input_tokens,
        output_tokens: n * USAGE.output_tokens,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        requests: n,
      });
      const trace = (await (await fetch(`${bed.url}/trace/${run.id}`)).json()) as Parameters<
        typeof renderTree
      >[0];
      expect(renderTree(trace).join("\n")).toContain(
        `tokens in ${n * USAGE.input_tokens} out ${n * USAGE.output_tokens}  ${n} requests`,
      );
      const page = await (await fetch(`${bed.url}/ui/trace/${run.id}`)).text();
      expect(page).toContain(`${n * USAGE.input_tokens} / ${n * USAGE.output_tokens} (${n} req)`);
      const stats = (await (await fetch(`${bed.url}/evals/stats?pipeline=usage`)).json()) as {
        versions: { tokens: unknown }[];
      };
      expect(stats.versions[0]?.tokens).toMatchObject({
        input: n * USAGE.input_tokens,
        output: n * USAGE.output_tokens,
        requests: n,
      });
    });

    const stoppedByBudget = async (hook: string, key: string, budget: RegExp) => {
      const run = await fire(hook);
      const [invocation] = run.invocations;
      expect(run.trigger.status).toBe("error");
      expect(invocation.diagnostic).toMatchObject({ code: "budget_exceeded" });
      expect(invocation.diagnostic.message).toMatch(budget);
      expect(invocation.diagnostic.message).toContain(
        "it used 21 tokens (input 20, output 1) over 1 model request",
      );
      // exactly one model request reached the API: the second was refused at the gateway
      expect(modelCalls(bed.fake, key)).toHaveLength(1);
      const agent = run.tasks.find((task) => task.kind === "agent");
      expect(agent).toMatchObject({
        status: "failed",
        diagnostic: { code: "budget_exceeded" },
        usage: { input_tokens: 20, output_tokens: 1, requests: 1 },
      });
      // the agent was stopped: nothing of the run is left running
      const runDir = join(bed.dir, "workspaces", run.workloads[0].id, invocation.id);
      expect(await processesOf(runDir)).toEqual([]);
      await bed.worker.waitForLog(
        (line) => line.event === "gateway.budget_exceeded" && line.invocation === invocation.id,
        "gateway.budget_exceeded",
      );
      return { run, agent };
    };

    it("budget.tokens: 15 with a model that reports 21 tokens on its first answer allows exactly one model request; the run ends budget_exceeded", async () => {
      await stoppedByBudget("tokens", KEYS.tokens, /spent its budget\.tokens of 15 tokens/);
    });

    it("budget.cost with the target's price stops the run the same way, with the cost it used", async () => {
      const { agent } = await stoppedByBudget(
        "cost",
        KEYS.cost,
        /spent its budget\.cost of \$0\.2: .*\$0\.210000/,
      );
      expect(agent.usage.cost_usd).toBeCloseTo(0.21, 6);
    });

    it("svc doctor shows the worker's gateway listener", async () => {
      const bin = join(import.meta.dirname, "../../../bin/svc.js");
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), SVC_DAEMON_URL: bed.url };
      const run = await promisify(execFile)(process.execPath, [bin, "doctor", "--json", "--dir", bed.dir], {
        env,
      }).catch((error: { stdout: string }) => error); // exit 1 on problems elsewhere: the report is still JSON
      const report = JSON.parse(run.stdout) as { checks: { name: string; detail: string }[] };
      const daemon = report.checks.find((check) => check.name === "daemon");
      expect(daemon?.detail).toMatch(
        new RegExp(`gateway: model gateways: worker \\S+: ${bed.gatewayUrl} listening`),
      );
    });

    it("a 401 through the gateway kills the credential (decided at the gateway) and the run fails over to the next target", async () => {
      const run = await fire("dead");
      expect(run.trigger.status, JSON.stringify(run.invocations[0]?.diagnostic)).toBe("completed");
      expect(run.invocations[0]).toMatchObject({ target: "backup", result: SUMMARY });
      const { rows } = await bed.pool.query(
        "SELECT state, reason FROM svc.credential_cooldowns WHERE target = 'revoked' AND credential = 'c0'",
      );
      expect(rows).toEqual([{ state: "dead", reason: "HTTP 401" }]);
      // the real key reached the model API once, from the gateway
      expect(bed.fake.seen(KEYS.revoked)).toHaveLength(1);
      const line = await bed.worker.waitForLog(
        (log) => log.event === "credential.dead" && log.target === "revoked",
        "credential dead",
      );
      expect(String(line.message)).toContain("credential dead: revoked/c0 (HTTP 401)");
      expect(bed.worker.output.join("\n")).not.toContain(KEYS.revoked);
      const transcript = run.artifacts.find((artifact) => artifact.name === "transcript");
      expect(transcript.rendered).toContain("# credential c0 refused: HTTP 401");
    });
  });
}
