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

async function load(review: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-review-config-"));
  dirs.push(dir);
  await cp(BASE, dir, { recursive: true });
  await writeFile(
    join(dir, "daemon.yaml"),
    'targets:\n  local:\n    runtime: command\n    command: ["/bin/cat"]\nask:\n  targets: [local]\n',
  );
  await writeFile(
    join(dir, "pipelines", "main.yaml"),
    `version: 1.0.0\nagent: bot\ninstructions: Review.\ntargets: [local]\n${review}\n`,
  );
  return loadConfig({ dir, env: {} });
}

const messages = (result: Awaited<ReturnType<typeof load>>) =>
  result.problems.map((problem) => `${problem.severity} ${problem.path}: ${problem.message}`);

describe("review: max_changed_lines and paths", () => {
  it("reads the block into the pipeline", async () => {
    const result = await load(`review:
  max_changed_lines: 20000
  paths:
    - { path: "db/**", instructions: "Every migration must be reversible." }
    - { path: "**/*.snap", ignore: true }`);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.config.pipelines.main?.review).toEqual({
      maxChangedLines: 20000,
      paths: [
        { path: "db/**", instructions: "Every migration must be reversible." },
        { path: "**/*.snap", ignore: true },
      ],
    });
  });

  it("names the key and the fix of each bad rule", async () => {
    const result = await load(`review:
  max_changed_lines: 0
  paths:
    - { path: "/db/**", instructions: "x" }
    - { path: "a/**" }
    - { path: "b/**", instructions: "x", ignore: true }
    - { instructions: "x", colour: red }
    - { path: "../up/**", ignore: "yes" }`);
    expect(result.ok).toBe(false);
    expect(messages(result)).toEqual(
      expect.arrayContaining([
        'error review.max_changed_lines: pipelines/main.yaml: "review.max_changed_lines" must be at least 1 (got 0)',
        'error review.paths[0].path: pipelines/main.yaml: "review.paths[0].path" must be relative to the repository root - write "db/**"',
        'error review.paths[1]: pipelines/main.yaml: "review.paths[1]" says nothing about its paths - add instructions: "..." or ignore: true',
        'error review.paths[2]: pipelines/main.yaml: "review.paths[2]" sets both instructions and ignore: true - findings on an ignored path are dropped, so its instructions would never matter; keep one',
        'error review.paths[3].colour: pipelines/main.yaml: "review.paths[3].colour" is not allowed - a path rule takes only path, instructions, ignore; delete the key',
        'error review.paths[3].path: pipelines/main.yaml: "review.paths[3].path" is required - write a glob over repository paths such as "db/**"',
        'error review.paths[4].path: pipelines/main.yaml: "review.paths[4].path" must not leave the repository with ".." - write a path from its root',
        'error review.paths[4].ignore: pipelines/main.yaml: "review.paths[4].ignore" must be a boolean - write ignore: true to drop findings on these paths',
      ]),
    );
  });

  it("paths must be a list", async () => {
    const result = await load("review:\n  paths: { path: db }");
    expect(messages(result)).toContain(
      'error review.paths: pipelines/main.yaml: "review.paths" must be a list such as [{ path: "db/**", instructions: "..." }, { path: "**/*.snap", ignore: true }]',
    );
  });
});
