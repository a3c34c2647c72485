// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import { periodReset, periodStart } from "../../../worker/run/budget-periods.ts";

const BASE = join(import.meta.dirname, "../../fixtures/config/invalid/host-tool-relative-exec");
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function load(budgets: string, targets = "[claude]") {
  const dir = await mkdtemp(join(tmpdir(), "svc-budget-periods-"));
  dirs.push(dir);
  await cp(BASE, dir, { recursive: true });
  await writeFile(
    join(dir, "daemon.yaml"),
    `targets:
  local: { runtime: command, command: ["/bin/cat"] }
  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    credentials: [{ name: main, secret: "\${KEY}" }]
    price: { input: 3, output: 15 }
  haiku:
    runtime: claude-code
    model: claude-haiku-4-5
    credentials: [{ name: main, secret: "\${KEY}" }]
    price: { input: 1, output: 5 }
${budgets}ask:
  targets: [local]
`,
  );
  await writeFile(
    join(dir, "pipelines", "main.yaml"),
    `version: 1.0.0\nagent: bot\ninstructions: Review.\ntargets: ${targets}\n`,
  );
  return loadConfig({ dir, env: { KEY: "k" } });
}

const messages = (result: Awaited<ReturnType<typeof load>>) =>
  result.problems.map((problem) => `${problem.file} ${problem.path}: ${problem.message}`);

describe("budgets of daemon.yaml and over_budget targets", () => {
  it("reads budgets: { org, repos } and a targets entry { target, when: over_budget }", async () => {
    const result = await load(
      "budgets:\n  org: { per: month, cost: 50 }\n  repos: { per: day, cost: 5 }\n",
      "[claude, { target: haiku, when: over_budget }]",
    );
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.config.budgets).toEqual({
      org: { per: "month", cost: 50 },
      repos: { per: "day", cost: 5 },
    });
    expect(result.config.pipelines.main?.targets).toEqual(["claude"]);
    expect(result.config.pipelines.main?.budget).toEqual({ overBudget: ["haiku"] });
  });

  it("refuses a period other than day or month, a cost of 0, and an unknown key, naming the key and the fix", async () => {
    const result = await load("budgets:\n  org: { per: week, cost: 0 }\n  team: {}\n");
    expect(result.ok).toBe(false);
    expect(messages(result)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^daemon.yaml budgets.org.per: daemon.yaml: "budgets.org.per" must be one of day, month \(got "week"\)/,
        ),
        expect.stringMatching(
          /^daemon.yaml budgets.org.cost: daemon.yaml: "budgets.org.cost" must be more than 0 \(USD\)/,
        ),
        expect.stringMatching(/^daemon.yaml budgets.team: daemon.yaml: unknown key "budgets.team"/),
      ]),
    );
  });

  it("reads budgets.members_first, and refuses anything but true or false, naming the key and what it does", async () => {
    const first = await load("budgets:\n  repos: { per: day, cost: 5 }\n  members_first: true\n");
    expect(first.problems).toEqual([]);
    if (first.ok)
      expect(first.config.budgets).toEqual({ repos: { per: "day", cost: 5 }, membersFirst: true });
    const wrong = await load("budgets:\n  repos: { per: day, cost: 5 }\n  members_first: yes\n");
    expect(wrong.ok).toBe(false);
    expect(messages(wrong)).toEqual([
      expect.stringContaining(
        '"budgets.members_first" must be true or false (got "yes") - true resumes the held runs of the repository\'s team',
      ),
    ]);
    const alone = await load("budgets:\n  members_first: true\n");
    expect(alone.problems.map((p) => [p.severity, p.message])).toEqual([
      ["warning", expect.stringContaining("neither is set - add one, or delete members_first")],
    ]);
  });

  it("refuses an over_budget entry with another `when` or an undefined target", async () => {
    const other = await load("", "[claude, { target: haiku, when: always }]");
    expect(messages(other)).toEqual([
      expect.stringContaining('"targets[1].when" must be over_budget (got "always")'),
    ]);
    const unknown = await load("", "[claude, { target: opus, when: over_budget }]");
    expect(messages(unknown)).toEqual([
      expect.stringContaining(
        'over_budget target "opus" is not defined - add it to the top-level "targets:" map',
      ),
    ]);
    const alone = await load("", "[{ target: haiku, when: over_budget }]");
    expect(messages(alone)).toEqual([expect.stringContaining('"targets" must list at least one target')]);
  });
});

describe("budget periods are calendar days and months in UTC", () => {
  const now = new Date("2025-01-31T23:59:59.999Z");
  it("a day starts at midnight UTC and resets at the next", () => {
    expect(periodStart("day", now).toISOString()).toBe("2025-01-31T00:00:00.000Z");
    expect(periodReset("day", now).toISOString()).toBe("2025-02-01T00:00:00.000Z");
  });
  it("a month starts on its first and resets on the next month's, across a year", () => {
    expect(periodStart("month", now).toISOString()).toBe("2025-01-01T00:00:00.000Z");
    expect(periodReset("month", new Date("2025-12-15T10:00:00Z")).toISOString()).toBe(
      "2026-01-01T00:00:00.000Z",
    );
  });
});
