import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadConfig } from "../../../shared/config/load.ts";

const DAEMON = `targets:\n  local:\n    runtime: command\n    command: ["/bin/cat"]\nask:\n  targets: [local]\n`;

/** Values shaped like configuration: the keys svc reads, mixed with arbitrary ones. */
const key = fc.oneof(
  fc.constantFrom(
    "version",
    "agent",
    "skill",
    "companions",
    "instructions",
    "trigger",
    "webhook",
    "codehost",
    "tracker",
    "manual",
    "output",
    "outputs",
    "result",
    "schema",
    "properties",
    "$ref",
    "handler",
    "config",
    "env",
    "setup",
    "run",
    "retain_checkout",
    "checkout",
    "depth",
    "submodules",
    "lfs",
    "paths",
    "targets",
    "orchestrator",
    "strategy",
    "type",
    "knowledge",
    "method",
    "delivery",
    "sandbox",
    "mounts",
    "principals",
    "principal",
    "args",
    "required",
    "events",
    "repos",
    "clone_url",
    "workspaces",
    "repo_cache",
    "max_size",
  ),
  fc.string({ maxLength: 8 }),
);
const leaf = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("local", "auto", "{{ x }}", "SVC_X", "1.0.0", "codehost.review", "~/.config/gh"),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small" }, leaf, tie("list"), tie("map")),
  list: fc.array(tie("node"), { maxLength: 4 }),
  map: fc.dictionary(key, tie("node"), { maxKeys: 6 }),
})).node;

/** Structured documents, and raw text that is often not YAML at all. */
const document = fc.oneof(
  value.map((data) => stringify(data)),
  fc.string({ maxLength: 200 }),
  fc
    .array(fc.constantFrom("a:", " b", "- c", "{", "]", "&x", "*x", "!!str", ": :", "'", "\t", "---", "\n"), {
      maxLength: 30,
    })
    .map((parts) => parts.join("")),
);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-fuzz-"));
  await mkdir(join(dir, "pipelines"));
  await mkdir(join(dir, "agents", "bot"), { recursive: true });
  await writeFile(join(dir, "agents", "bot", "PERSONA.md"), "---\ndescription: x\n---\nx\n");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("arbitrary YAML", () => {
  it("as a pipeline file: never throws; every problem names a file", async () => {
    await writeFile(join(dir, "daemon.yaml"), DAEMON);
    await fc.assert(
      fc.asyncProperty(document, async (text) => {
        await writeFile(join(dir, "pipelines", "fuzz.yaml"), text);
        const result = await loadConfig({ dir, env: {} });
        for (const problem of result.problems) {
          expect(problem.file).toBe("pipelines/fuzz.yaml");
          expect(problem.message.startsWith("pipelines/fuzz.yaml: ")).toBe(true);
          expect(typeof problem.code).toBe("string");
        }
        if (!result.ok) expect(result.problems.some((problem) => problem.severity === "error")).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("as daemon.yaml: never throws; every problem names a file", async () => {
    await rm(join(dir, "pipelines", "fuzz.yaml"), { force: true });
    await fc.assert(
      fc.asyncProperty(document, async (text) => {
        await writeFile(join(dir, "daemon.yaml"), text);
        const result = await loadConfig({ dir, env: {} });
        for (const problem of result.problems) {
          expect(problem.file).toBe("daemon.yaml");
          expect(problem.message.startsWith("daemon.yaml: ")).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
