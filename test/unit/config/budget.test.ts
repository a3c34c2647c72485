// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const BASE = join(import.meta.dirname, "../../fixtures/config/invalid/host-tool-relative-exec");
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function load(claudePrice: string, pipeline: string, localPrice = "") {
  const dir = await mkdtemp(join(tmpdir(), "svc-budget-config-"));
  dirs.push(dir);
  await cp(BASE, dir, { recursive: true });
  await writeFile(
    join(dir, "daemon.yaml"),
    `targets:
  local:
    runtime: command
    command: ["/bin/cat"]
${localPrice}  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    credentials: [{ name: main, secret: "\${KEY}" }]
${claudePrice}ask:
  targets: [local]
`,
  );
  await writeFile(
    join(dir, "pipelines", "main.yaml"),
    `version: 1.0.0\nagent: bot\ninstructions: Review.\n${pipeline}\n`,
  );
  return loadConfig({ dir, env: { KEY: "k" } });
}

const messages = (result: Awaited<ReturnType<typeof load>>) =>
  result.problems.map((problem) => `${problem.file} ${problem.severity}: ${problem.message}`);

describe("budget and price", () => {
  it("reads budget: { tokens, cost, requests } and targets.<name>.price", async () => {
    const result = await load(
      "    price: { input: 3, output: 15, cache_read: 0.3 }\n",
      "targets: [claude]\nbudget: { tokens: 15, cost: 2.5, requests: 4 }",
    );
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.config.pipelines.main?.budget).toEqual({ tokens: 15, cost: 2.5, requests: 4 });
    expect(result.config.targets.claude).toMatchObject({ price: { input: 3, output: 15, cacheRead: 0.3 } });
  });

  it("budget.cost needs the price of every target the pipeline runs on", async () => {
    const result = await load("", "targets: [claude]\nbudget: { cost: 1 }");
    expect(result.ok).toBe(false);
    expect(messages(result)).toContain(
      'pipelines/main.yaml error: pipelines/main.yaml: "budget.cost" needs the price of every target the pipeline runs on - add "price: { input, output }" (USD per million tokens) to targets.claude in daemon.yaml',
    );
  });

  it("refuses an empty budget, a wrong type, a zero cost and an incomplete price, naming the key", async () => {
    const empty = await load("", "targets: [claude]\nbudget: {}");
    expect(messages(empty).join("\n")).toContain(
      '"budget" must set at least one of tokens, cost (USD) or requests - e.g. budget: { tokens: 200000 }',
    );
    const wrong = await load("", "targets: [claude]\nbudget: { tokens: many }");
    expect(messages(wrong).join("\n")).toContain('"budget.tokens" must be an integer, not');
    const zero = await load(
      "    price: { input: 3, output: 15 }\n",
      "targets: [claude]\nbudget: { cost: 0 }",
    );
    expect(messages(zero).join("\n")).toContain('"budget.cost" must be more than 0 (USD)');
    const price = await load("    price: { input: 3 }\n", "targets: [claude]");
    expect(messages(price).join("\n")).toContain(
      '"targets.claude.price.output" is required - give USD per million tokens, e.g. targets.claude.price: { input: 3, output: 15 }',
    );
  });

  it("a command target takes no price, and a budget on it is a warning: its calls pass no gateway", async () => {
    const priced = await load("", "targets: [claude]", "    price: { input: 1, output: 1 }\n");
    expect(messages(priced).join("\n")).toContain(
      '"targets.local.price" applies to openai, claude-code and codex targets',
    );
    const budget = await load("", "targets: [local]\nbudget: { tokens: 100 }");
    expect(budget.ok).toBe(true);
    expect(messages(budget).join("\n")).toContain(
      'warning: pipelines/main.yaml: "budget" does not bound target "local": a command agent calls its model API itself',
    );
  });
});
