import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import type { LoadResult } from "../../../shared/config/types.ts";

/** `record_answers:` of a pipeline: a boolean, read as the pipeline's `recordAnswers`. */
const DAEMON = `targets:
  local: { runtime: command, command: ["/bin/true"], timeout: 30s }
ask:
  targets: [local]
`;

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(extra: string): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), "svc-record-answers-"));
  temps.push(dir);
  await mkdir(join(dir, "pipelines"));
  await mkdir(join(dir, "agents", "helper"), { recursive: true });
  await writeFile(
    join(dir, "agents", "helper", "PERSONA.md"),
    "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
  );
  await writeFile(join(dir, "daemon.yaml"), DAEMON);
  await writeFile(
    join(dir, "pipelines", "review.yaml"),
    `version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: review\n${extra}`,
  );
  return loadConfig({ dir, env: {} });
}

describe("record_answers in a pipeline", () => {
  it("true records, absent or false does not", async () => {
    for (const [extra, expected] of [
      ["record_answers: true\n", true],
      ["record_answers: false\n", undefined],
      ["", undefined],
    ] as const) {
      const result = await load(extra);
      expect(result.ok, JSON.stringify(result.problems)).toBe(true);
      expect(result.ok && result.config.pipelines.review!.recordAnswers).toBe(expected);
    }
  });

  it("anything else is an error naming the key and what it does", async () => {
    const result = await load("record_answers: yes please\n");
    const problems = result.problems.filter((problem) => problem.severity === "error");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: "pipelines/review.yaml", path: "record_answers" });
    expect(problems[0]!.message).toContain('"record_answers" must be true or false (got "yes please")');
    expect(problems[0]!.message).toContain("svc eval backtest --replay-answers");
  });
});
