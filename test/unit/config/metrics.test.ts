// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { appendFile, cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const VALID = join(import.meta.dirname, "../../fixtures/config/valid");
const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The valid fixture with `extra` appended to daemon.yaml (and `worker:` replaced when given). */
async function withDaemon(extra: string, worker?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-config-metrics-"));
  temps.push(dir);
  await cp(VALID, dir, { recursive: true });
  const path = join(dir, "daemon.yaml");
  if (worker !== undefined) {
    const text = await readFile(path, "utf8");
    await writeFile(path, text.replace(/^worker:\n(?: {2}.*\n)*/m, ""));
    await appendFile(path, worker);
  }
  await appendFile(path, extra);
  return dir;
}

const env = {
  DEPLOY_HOOK_TOKEN: "a",
  LINEAR_WEBHOOK_SECRET: "b",
  OPENAI_KEY_A: "c",
  OPENAI_KEY_B: "d",
  CHAT_BOT_TOKEN: "e",
  CI_TOKEN: "f",
  METRICS_TOKEN: "scrape-me-0123",
};

describe("metrics keys of daemon.yaml", () => {
  it("reads metrics.token and worker.metrics_port", async () => {
    const dir = await withDaemon(
      'metrics:\n  token: "${METRICS_TOKEN}"\n',
      "worker:\n  metrics_port: 9464\n",
    );
    const result = await loadConfig({ dir, env });
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.metrics).toEqual({ token: { kind: "inline", value: "scrape-me-0123" } });
    expect(result.config.worker.metricsPort).toBe(9464);
  });

  it("leaves both off by default", async () => {
    const result = await loadConfig({ dir: await withDaemon(""), env });
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.metrics).toBeUndefined();
    expect(result.config.worker.metricsPort).toBeUndefined();
  });

  it("reports a port out of range and a metrics block without a token, with their key paths", async () => {
    const dir = await withDaemon("metrics:\n  tokn: x\n", "worker:\n  metrics_port: 70000\n");
    const result = await loadConfig({ dir, env });
    expect(result.ok).toBe(false);
    const problems = result.problems.map((p) => `${p.path} ${p.code}: ${p.message}`);
    expect(
      problems.some(
        (p) => p.startsWith("worker.metrics_port invalid_value") && p.includes("between 1 and 65535"),
      ),
    ).toBe(true);
    expect(
      problems.some((p) => p.startsWith("metrics secret_source_conflict") && p.includes('"token"')),
    ).toBe(true);
    expect(problems.join("\n")).not.toContain("scrape-me-0123");
  });
});
