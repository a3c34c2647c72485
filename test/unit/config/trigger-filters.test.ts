// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

/** `trigger.codehost` pull request filters as daemon.yaml and a pipeline file state them. */
const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const DAEMON = `webhooks:
  sources:
    github: { verify: codehost, secret: "\${HOOK}" }
targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
codehost:
  token: \${CODEHOST_TOKEN}
`;

async function load(trigger: string, daemon = DAEMON) {
  const dir = await mkdtemp(join(tmpdir(), "svc-trigger-filters-"));
  temps.push(dir);
  const files: Record<string, string> = {
    "daemon.yaml": daemon,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "pipelines/pr-review.yaml": `version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: review\ntrigger:\n  codehost:\n${trigger}`,
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return loadConfig({ dir, env: { HOOK: "h", CODEHOST_TOKEN: "t" } });
}

async function problems(trigger: string, daemon?: string) {
  const result = await load(trigger, daemon);
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.problems.filter((p) => p.severity !== "warning");
}

describe("trigger.codehost pull request filters", () => {
  it("reads branches, paths, labels and drafts onto the entry, beside a bare event list", async () => {
    const result = await load(
      `    - pull_request.closed
    - events: [pull_request.opened, pull_request.synchronize]
      branches: [main, "release/**"]
      paths: ["src/**", "!src/vendor/**"]
      labels: [ai-review]
      drafts: true
    - events: [pull_request]
      branches_ignore: [gh-pages]
      paths_ignore: ["docs/**"]
`,
    );
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.config.pipelines["pr-review"]?.trigger?.codehost).toEqual([
      { events: ["pull_request.closed"], repos: [] },
      {
        events: ["pull_request.opened", "pull_request.synchronize"],
        repos: [],
        filters: {
          branches: ["main", "release/**"],
          paths: ["src/**", "!src/vendor/**"],
          labels: ["ai-review"],
          drafts: true,
        },
      },
      {
        events: ["pull_request"],
        repos: [],
        filters: { branchesIgnore: ["gh-pages"], pathsIgnore: ["docs/**"] },
      },
    ]);
  });

  it("refuses a filter beside another event than pull_request's, naming the key and the fix", async () => {
    expect(
      await problems("    - events: [pull_request.opened, push]\n      branches: [main]\n"),
    ).toMatchObject([
      {
        file: "pipelines/pr-review.yaml",
        path: "trigger.codehost[0].branches",
        code: "trigger_filter_refused",
        message: expect.stringContaining(
          "filters pull requests only, and this entry also lists push - move push",
        ),
      },
    ]);
  });

  it("refuses a filter on a comment command", async () => {
    expect(await problems("    - command: review\n      labels: [ai-review]\n")).toMatchObject([
      {
        path: "trigger.codehost[0].labels",
        code: "trigger_filter_refused",
        message: expect.stringContaining("delete labels"),
      },
    ]);
  });

  it("refuses paths beside paths_ignore, an empty list, an exclusion first and a non-boolean drafts", async () => {
    const found = await problems(
      `    - events: [pull_request.opened]
      paths: ["src/**"]
      paths_ignore: ["docs/**"]
    - events: [pull_request.opened]
      labels: []
      branches: ["!main"]
      drafts: sometimes
`,
    );
    expect(found.map((p) => [p.path, p.code])).toEqual([
      ["trigger.codehost[0].paths_ignore", "invalid_value"],
      ["trigger.codehost[1].labels", "invalid_value"],
      ["trigger.codehost[1].branches[0]", "invalid_value"],
      ["trigger.codehost[1].drafts", "invalid_type"],
    ]);
    expect(found[0]?.message).toContain("cannot both be set on one entry");
    expect(found[1]?.message).toContain("must not be empty");
    expect(found[2]?.message).toContain('put a glob that includes first, e.g. branches: ["**", "!main"]');
  });

  it("refuses filters under codehost.kind: gitlab, which it does not apply them to", async () => {
    const gitlab = `webhooks:
  sources:
    gitlab: { verify: gitlab, secret: "\${HOOK}" }
targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
codehost:
  kind: gitlab
  token: \${CODEHOST_TOKEN}
`;
    expect(
      await problems(
        "    - events: [pull_request.opened]\n      branches: [main]\n      drafts: true\n",
        gitlab,
      ),
    ).toMatchObject([
      {
        path: "trigger.codehost",
        code: "trigger_filter_refused",
        message: expect.stringContaining("with branches, drafts, and codehost.kind is gitlab"),
      },
    ]);
  });
});
