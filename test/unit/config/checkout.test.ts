import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const BASE = join(import.meta.dirname, "../../fixtures/config/invalid/host-tool-relative-exec");
const DAEMON = `targets:
  local:
    runtime: command
    command: ["/bin/cat"]
ask:
  targets: [local]
`;
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A configuration whose one pipeline, `pipelines/review.yaml`, ends with `extra`. */
async function load(extra: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-checkout-config-"));
  dirs.push(dir);
  await cp(BASE, dir, { recursive: true });
  await rm(join(dir, "pipelines", "main.yaml"));
  await writeFile(join(dir, "daemon.yaml"), DAEMON);
  await writeFile(
    join(dir, "pipelines", "review.yaml"),
    `version: 1.0.0\nagent: bot\ntargets: [local]\ninstructions: Review.\n${extra}\n`,
  );
  return loadConfig({ dir, env: {} });
}

const problems = (result: Awaited<ReturnType<typeof load>>) =>
  result.problems.map((problem) => [problem.path, problem.code, problem.severity, problem.message]);

/** The one error of a pipeline with `checkout: <block>`. */
async function refusal(block: string) {
  const result = await load(`checkout: ${block}`);
  expect(result.ok).toBe(false);
  expect(result.problems).toHaveLength(1);
  const [problem] = result.problems;
  return [problem!.path, problem!.code, problem!.message];
}

describe("checkout: in a pipeline", () => {
  it("defaults to what a review needs: no depth, no submodules, no LFS, the whole tree", async () => {
    for (const extra of ["", "checkout:", "checkout: {}"]) {
      const result = await load(extra);
      expect(result.problems).toEqual([]);
      const checkout = result.ok ? result.config.pipelines.review?.checkout : undefined;
      expect(checkout).toEqual({ submodules: false, lfs: false, paths: [] });
      expect(checkout && "depth" in checkout).toBe(false);
    }
  });

  it("reads depth, submodules, lfs and paths", async () => {
    const result = await load(
      "checkout:\n  depth: 50\n  submodules: recursive\n  lfs: true\n  paths: [services/api, libs/shared/, .github]\n",
    );
    expect(result.problems).toEqual([]);
    expect(result.ok && result.config.pipelines.review?.checkout).toEqual({
      depth: 50,
      submodules: "recursive",
      lfs: true,
      paths: ["services/api", "libs/shared", ".github"],
    });
    const full = await load("checkout: { depth: full, submodules: true, paths: [] }");
    expect(full.ok && full.config.pipelines.review?.checkout).toEqual({
      depth: "full",
      submodules: true,
      lfs: false,
      paths: [],
    });
    const most = await load("checkout: { depth: 1000000, submodules: false, lfs: false }");
    expect(most.ok && most.config.pipelines.review?.checkout.depth).toBe(1_000_000);
  });

  it("refuses a depth that is not a positive integer or full", async () => {
    const must = 'pipelines/review.yaml: "checkout.depth" must be a positive integer or "full"';
    expect(await refusal("{ depth: shallow }")).toEqual([
      "checkout.depth",
      "invalid_value",
      `${must}, not "shallow"`,
    ]);
    expect(await refusal("{ depth: 0 }")).toEqual(["checkout.depth", "invalid_value", `${must}, not 0`]);
    expect(await refusal("{ depth: -3 }")).toEqual(["checkout.depth", "invalid_value", `${must}, not -3`]);
    expect(await refusal("{ depth: 2.5 }")).toEqual(["checkout.depth", "invalid_value", `${must}, not 2.5`]);
    expect(await refusal('{ depth: "10" }')).toEqual([
      "checkout.depth",
      "invalid_value",
      `${must}, not "10"`,
    ]);
    expect(await refusal("{ depth: true }")).toEqual(["checkout.depth", "invalid_type", `${must}, not true`]);
    expect(await refusal("{ depth: [1] }")).toEqual([
      "checkout.depth",
      "invalid_type",
      `${must}, not a list`,
    ]);
    expect(await refusal("{ depth: 1000001 }")).toEqual([
      "checkout.depth",
      "invalid_value",
      'pipelines/review.yaml: "checkout.depth" must be at most 1000000 (got 1000001) - write "full" for the whole history',
    ]);
  });

  it("refuses submodules other than false, true or recursive, and lfs other than a boolean", async () => {
    expect(await refusal("{ submodules: yes }")).toEqual([
      "checkout.submodules",
      "invalid_value",
      'pipelines/review.yaml: "checkout.submodules" must be false, true or "recursive", not "yes"',
    ]);
    expect(await refusal("{ submodules: 2 }")).toEqual([
      "checkout.submodules",
      "invalid_value",
      'pipelines/review.yaml: "checkout.submodules" must be false, true or "recursive", not 2',
    ]);
    expect(await refusal("{ lfs: sometimes }")).toEqual([
      "checkout.lfs",
      "invalid_type",
      'pipelines/review.yaml: "checkout.lfs" must be a boolean (true or false)',
    ]);
  });

  it("refuses paths that are not relative directories of the repository, naming the entry", async () => {
    const must = (index: number) =>
      `pipelines/review.yaml: "checkout.paths[${index}]" must be a directory relative to the repository's root such as services/api,`;
    const cases: [string, string][] = [
      ["/etc", 'not an absolute path (got "/etc")'],
      ["../secrets", 'without ".." segments (got "../secrets")'],
      ["services/../../etc", 'without ".." segments (got "services/../../etc")'],
      ["-x", 'not starting with "-" (got "-x")'],
      ["src/*", 'not a pattern: cone mode takes directories, without "*", "?", "[" or "\\" (got "src/*")'],
      ["lib?", 'not a pattern: cone mode takes directories, without "*", "?", "[" or "\\" (got "lib?")'],
      ["[abc]", 'not a pattern: cone mode takes directories, without "*", "?", "[" or "\\" (got "[abc]")'],
      ["./src", 'without "." or empty segments (got "./src")'],
      ["a//b", 'without "." or empty segments (got "a//b")'],
      ["src\nlib", 'without control characters (a newline, NUL) (got "src\\nlib")'],
      ["src\u0000", 'without control characters (a newline, NUL) (got "src\\u0000")'],
    ];
    for (const [path, got] of cases) {
      expect(await refusal(`{ paths: [services/api, ${JSON.stringify(path)}] }`)).toEqual([
        "checkout.paths[1]",
        "invalid_value",
        `${must(1)} ${got}`,
      ]);
    }
    expect(await refusal('{ paths: [""] }')).toEqual([
      "checkout.paths[0]",
      "invalid_type",
      'pipelines/review.yaml: "checkout.paths[0]" must be a non-empty string, e.g. services/api',
    ]);
    expect(await refusal("{ paths: [3] }")).toEqual([
      "checkout.paths[0]",
      "invalid_type",
      'pipelines/review.yaml: "checkout.paths[0]" must be a non-empty string, e.g. services/api',
    ]);
    expect(await refusal("{ paths: services/api }")).toEqual([
      "checkout.paths",
      "invalid_type",
      'pipelines/review.yaml: "checkout.paths" must be a list of directories, not a string - e.g. paths: [services/api, libs/shared]',
    ]);
  });

  it("takes at most 200 paths", async () => {
    const list = (n: number) => `[${Array.from({ length: n }, (_, i) => `dir${i}`).join(", ")}]`;
    const most = await load(`checkout: { paths: ${list(200)} }`);
    expect(most.ok && most.config.pipelines.review?.checkout.paths).toHaveLength(200);
    expect(await refusal(`{ paths: ${list(201)} }`)).toEqual([
      "checkout.paths",
      "invalid_value",
      'pipelines/review.yaml: "checkout.paths" lists 201 directories, more than 200 - name their common parent directories instead',
    ]);
  });

  it("refuses a checkout that is not a mapping, and warns about unknown keys", async () => {
    expect(await refusal("full")).toEqual([
      "checkout",
      "invalid_type",
      'pipelines/review.yaml: "checkout" must be a mapping, not a string such as { depth: 50, submodules: true, lfs: true, paths: [services/api] }',
    ]);
    const unknown = await load("checkout: { depth: 1, sparse: [src] }");
    expect(unknown.ok).toBe(true);
    expect(problems(unknown)).toEqual([
      [
        "checkout.sparse",
        "unknown_key",
        "warning",
        'pipelines/review.yaml: unknown key "checkout.sparse" is ignored - check its spelling; known keys here: depth, submodules, lfs, paths',
      ],
    ]);
  });
});
