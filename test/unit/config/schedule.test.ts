import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatProblems } from "../../../shared/config/format.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { allSchedules } from "../../../shared/config/schedule.ts";
import type { ConfigProblem } from "../../../shared/config/types.ts";

const REFERENCE = join(import.meta.dirname, "../../fixtures/config/reference");
const ENV = {
  DEPLOY_HOOK_TOKEN: "t1",
  LINEAR_WEBHOOK_SECRET: "t2",
  OPENAI_KEY_A: "t3",
  OPENAI_KEY_B: "t4",
  CHAT_BOT_TOKEN: "t5",
  CI_TOKEN: "t6",
};

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The reference fixture plus pipelines/<name>.yaml files with the given trigger and args blocks. */
async function withPipelines(files: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), "svc-schedule-"));
  temps.push(dir);
  await cp(REFERENCE, dir, { recursive: true });
  for (const [name, body] of Object.entries(files))
    await writeFile(
      join(dir, "pipelines", `${name}.yaml`),
      `version: 1.0.0\nagent: reviewer\ntargets: [gpt]\ninstructions: triage\n${body}`,
    );
  return loadConfig({ dir, env: ENV });
}

const ARGS = "args:\n  label: { type: string, required: true }\n  limit: { type: number, required: false }\n";

function errors(problems: ConfigProblem[]) {
  return problems
    .filter((p) => p.severity === "error")
    .map(({ file, path, code, message, line }) => ({ file, path, code, message, line }));
}

describe("trigger.schedule", () => {
  it("names the entries <pipeline>, <pipeline>-2 … with UTC as the default time zone", async () => {
    const result = await withPipelines({
      triage: `${ARGS}trigger:
  schedule:
    - { cron: "0 3 * * 1-5", timezone: Europe/Berlin, args: { label: bug }, catch_up: true }
    - { cron: "*/15 * * * *", args: { label: ops, limit: 5 } }
`,
    });
    if (!result.ok) throw new Error(formatProblems(result.problems));
    expect(allSchedules(result.config.pipelines)).toEqual([
      {
        name: "triage",
        pipeline: "triage",
        cron: "0 3 * * 1-5",
        timezone: "Europe/Berlin",
        args: { label: "bug" },
        catchUp: true,
      },
      {
        name: "triage-2",
        pipeline: "triage",
        cron: "*/15 * * * *",
        timezone: "UTC",
        args: { label: "ops", limit: 5 },
        catchUp: false,
      },
    ]);
  });

  it("refuses a bad cron, an unknown time zone and args the declaration refuses, naming file, key and fix", async () => {
    const result = await withPipelines({
      triage: `${ARGS}trigger:
  schedule:
    - cron: "0 0 3 * * *"
      args: { label: bug }
    - cron: "0 3 * * *"
      timezone: Europe/Berln
      args: { label: bug }
    - cron: "0 3 * * *"
      args: { label: 7, color: red }
    - cron: "0 3 * * *"
`,
    });
    expect(result.ok).toBe(false);
    expect(errors(result.problems)).toEqual([
      {
        file: "pipelines/triage.yaml",
        path: "trigger.schedule[0].cron",
        code: "invalid_value",
        line: 10,
        message:
          'pipelines/triage.yaml: "trigger.schedule[0].cron" "0 0 3 * * *" is not a valid cron expression: has 6 fields; write 5: minute hour day-of-month month day-of-week, e.g. "0 3 * * 1-5"',
      },
      {
        file: "pipelines/triage.yaml",
        path: "trigger.schedule[1].timezone",
        code: "invalid_value",
        line: 13,
        message:
          'pipelines/triage.yaml: "trigger.schedule[1].timezone" "Europe/Berln" is not a known time zone - write an IANA name such as Europe/Berlin or America/New_York (default UTC)',
      },
      {
        file: "pipelines/triage.yaml",
        path: "trigger.schedule[2].args.label",
        code: "invalid_value",
        line: 16,
        message:
          'pipelines/triage.yaml: schedule args refused by the pipeline\'s "args" declaration: "label" must be a string - give each declared arg a value of its type, or declare it under "args"',
      },
      {
        file: "pipelines/triage.yaml",
        path: "trigger.schedule[2].args.color",
        code: "invalid_value",
        line: 16,
        message:
          'pipelines/triage.yaml: schedule args refused by the pipeline\'s "args" declaration: "color" is not declared by pipelines/triage.yaml (declared: label, limit) - give each declared arg a value of its type, or declare it under "args"',
      },
      {
        file: "pipelines/triage.yaml",
        path: "trigger.schedule[3].args",
        code: "invalid_value",
        line: 17,
        message:
          'pipelines/triage.yaml: schedule args refused by the pipeline\'s "args" declaration: "label" is required - give each declared arg a value of its type, or declare it under "args"',
      },
    ]);
  });

  it("refuses a schedule list that is not a list, an entry without cron, and a name two pipelines share", async () => {
    const result = await withPipelines({
      solo: 'trigger:\n  schedule: { cron: "0 3 * * *" }\n',
      nocron: "trigger:\n  schedule:\n    - timezone: UTC\n",
      a: 'trigger:\n  schedule:\n    - cron: "0 1 * * *"\n    - cron: "0 2 * * *"\n',
      "a-2": 'trigger:\n  schedule:\n    - cron: "0 4 * * *"\n',
    });
    expect(result.ok).toBe(false);
    const found = errors(result.problems).map((p) => [p.file, p.path, p.code]);
    expect(found).toEqual([
      ["pipelines/a-2.yaml", "trigger.schedule", "duplicate_name"],
      ["pipelines/nocron.yaml", "trigger.schedule[0].cron", "required"],
      ["pipelines/solo.yaml", "trigger.schedule", "invalid_type"],
    ]);
    const duplicate = result.problems.find((p) => p.code === "duplicate_name");
    expect(duplicate?.message).toBe(
      'pipelines/a-2.yaml: schedule name "a-2" is also the name of a schedule of pipeline "a" - rename one of the pipeline files',
    );
  });
});
