/**
 * Loads and validates a configuration with 1,000 pipeline files. Baseline, measured in the same run:
 * reading and YAML-parsing the same files with no validation. Target: a full load under 1 s.
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { loadConfig } from "../shared/config/load.ts";

const PIPELINES = 1_000;
const ROUNDS = 7;
const here = import.meta.dirname;
const env = {
  DEPLOY_HOOK_TOKEN: "a",
  LINEAR_WEBHOOK_SECRET: "b",
  OPENAI_KEY_A: "c",
  OPENAI_KEY_B: "d",
  CHAT_BOT_TOKEN: "e",
  CI_TOKEN: "f",
};

function pipeline(i: number): string {
  // three shapes of the reference, so every rule family runs: webhook, skill with outputs, orchestrated chat
  if (i % 3 === 0)
    return `version: 1.${i}.0\nagent: releaser\ntrigger:\n  webhook: [deploy-hook]\ntargets: [local-agent]\ninstructions: |\n  Summarise deployment ${i}.\nsetup:\n  - run: echo "$EVENT_NAME" > "$RUN_DIR/e${i}.txt"\nenv:\n  DEPLOY_ENV: production\nretain_checkout: false\n`;
  if (i % 3 === 1)
    return `agent: reviewer\nskill: review\nprincipals:\n  pull-request-reviewer: codehost.principal.42\nprincipal: pull-request-reviewer\ntrigger:\n  codehost:\n    events: [pull_request.opened]\n    repos: [acme/widgets]\ntargets: [gpt, local-agent]\ninstructions: Review change ${i}.\nknowledge: { method: bm25, delivery: prompt }\nresult:\n  schema:\n    type: object\n    properties:\n      review: { $ref: svc://schemas/codehost/review/v1 }\noutputs:\n  review: { handler: codehost.review }\n`;
  return `version: 0.${i}.0\nagent: releaser\nskill: changelog\ncompanions: [review]\ntrigger:\n  tracker: [Issue.update]\ntargets: [gpt]\ninstructions: Announce release ${i}.\nresult:\n  schema:\n    type: object\n    properties:\n      announcement: { $ref: svc://schemas/chat/message/v1 }\noutputs:\n  announcement:\n    handler: chat.message\n    config: { bot: releasebot, channel: C0${i} }\norchestrator:\n  strategy: { type: auto }\n  targets: [gpt]\n`;
}

async function baseline(dir: string): Promise<number> {
  const files = await readdir(join(dir, "pipelines"));
  const texts = await Promise.all(files.map((file) => readFile(join(dir, "pipelines", file), "utf8")));
  let keys = 0;
  for (const text of texts) keys += Object.keys(parse(text) as object).length;
  return keys;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const dir = await mkdtemp(join(tmpdir(), "svc-bench-config-"));
try {
  await cp(join(here, "../test/fixtures/config/reference"), dir, { recursive: true });
  await Promise.all(
    Array.from({ length: PIPELINES }, (_, i) =>
      writeFile(join(dir, "pipelines", `p${String(i).padStart(4, "0")}.yaml`), pipeline(i)),
    ),
  );
  const loads: number[] = [];
  const parses: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    const result = await loadConfig({ dir, env });
    loads.push(performance.now() - start);
    if (!result.ok) throw new Error(`benchmark configuration is invalid: ${result.problems[0]?.message}`);
    if (Object.keys(result.config.pipelines).length !== PIPELINES + 4)
      throw new Error("not every pipeline loaded");
    start = performance.now();
    await baseline(dir);
    parses.push(performance.now() - start);
  }
  const load = median(loads);
  const parseOnly = median(parses);
  console.log(`pipelines: ${PIPELINES + 4} files, ${ROUNDS} rounds, medians`);
  console.log(`loadConfig (read + parse + validate + freeze): ${load.toFixed(1)} ms`);
  console.log(`baseline (read + yaml.parse, no validation):  ${parseOnly.toFixed(1)} ms`);
  console.log(
    `ratio load/baseline: ${(load / parseOnly).toFixed(2)}x; target < 1000 ms: ${load < 1000 ? "met" : "MISSED"}`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
