import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import { runPipeline } from "../../../shared/config/pipeline/shadow.ts";
import type { LoadResult } from "../../../shared/config/types.ts";

/** `shadow:` pairs a pipeline with its candidate file, which is no pipeline of its own. */
const DAEMON = `targets:
  local: { runtime: command, command: ["/bin/true"], timeout: 30s }
  next: { runtime: command, command: ["/bin/true"], timeout: 30s }
ask:
  targets: [local]
`;
const body = (version: string, target: string, extra = "") =>
  `version: ${version}\nagent: helper\ntargets: [${target}]\ninstructions: review\n${extra}`;

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(files: Record<string, string>): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), "svc-shadow-"));
  temps.push(dir);
  await mkdir(join(dir, "pipelines"));
  await mkdir(join(dir, "agents", "helper"), { recursive: true });
  await writeFile(
    join(dir, "agents", "helper", "PERSONA.md"),
    "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
  );
  await writeFile(join(dir, "daemon.yaml"), DAEMON);
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, "pipelines", name), text);
  return loadConfig({ dir, env: {} });
}

const errors = (result: LoadResult) =>
  result.problems
    .filter((problem) => problem.severity === "error")
    .map(({ file, path, code, message }) => ({ file, path, code, message }));

describe("shadow versions in the configuration", () => {
  it("pairs the candidate with its live pipeline, under the live name and its own version", async () => {
    const result = await load({
      "review.yaml": body(
        "1.0.0",
        "local",
        "shadow: { version_file: pipelines/review.next.yaml, share: 0.25 }\n",
      ),
      "review.next.yaml": body("1.1.0-next.1", "next"),
    });
    expect(errors(result)).toEqual([]);
    const config = result.ok ? result.config : undefined;
    expect(Object.keys(config!.pipelines)).toEqual(["review"]);
    const live = config!.pipelines.review!;
    expect(live.shadow).toMatchObject({ versionFile: "pipelines/review.next.yaml", share: 0.25 });
    expect(live.shadow!.candidate).toMatchObject({
      name: "review",
      version: "1.1.0-next.1",
      targets: ["next"],
    });
    expect(runPipeline(config!, "review", true)).toBe(live.shadow!.candidate);
    expect(runPipeline(config!, "review", false)).toBe(live);
  });

  it("loads a candidate with share 0, for backtests only, and refuses a negative share", async () => {
    const only = await load({
      "review.yaml": body(
        "1.0.0",
        "local",
        "shadow: { version_file: pipelines/review.next.yaml, share: 0 }\n",
      ),
      "review.next.yaml": body("1.1.0", "next"),
    });
    expect(errors(only)).toEqual([]);
    const live = only.ok ? only.config.pipelines.review : undefined;
    expect(live?.shadow).toMatchObject({ share: 0, candidate: { version: "1.1.0" } });
    const negative = await load({
      "review.yaml": body(
        "1.0.0",
        "local",
        "shadow: { version_file: pipelines/review.next.yaml, share: -0.5 }\n",
      ),
      "review.next.yaml": body("1.1.0", "next"),
    });
    expect(errors(negative)).toEqual([
      expect.objectContaining({
        path: "shadow.share",
        message: expect.stringContaining("0: none, the candidate is loaded for backtests only"),
      }),
    ]);
  });

  it("refuses a missing candidate file, the live version, a shadow of a shadow, and a share out of range", async () => {
    const missing = await load({
      "review.yaml": body("1.0.0", "local", "shadow: { version_file: pipelines/gone.yaml }\n"),
    });
    expect(errors(missing)).toEqual([
      expect.objectContaining({
        file: "pipelines/review.yaml",
        path: "shadow.version_file",
        code: "invalid_value",
      }),
    ]);
    expect(errors(missing)[0]!.message).toContain("names pipelines/gone.yaml, which does not exist");

    const same = await load({
      "review.yaml": body("1.0.0", "local", "shadow: { version_file: pipelines/review.next.yaml }\n"),
      "review.next.yaml": body("1.0.0", "next"),
    });
    expect(errors(same)).toEqual([
      expect.objectContaining({ file: "pipelines/review.next.yaml", path: "version", code: "invalid_value" }),
    ]);

    const nested = await load({
      "review.yaml": body("1.0.0", "local", "shadow: { version_file: pipelines/review.next.yaml }\n"),
      "review.next.yaml": body("1.1.0", "next", "shadow: { version_file: pipelines/review.yaml }\n"),
    });
    expect(errors(nested).map((problem) => problem.file)).toContain("pipelines/review.next.yaml");

    const share = await load({
      "review.yaml": body(
        "1.0.0",
        "local",
        "shadow: { version_file: pipelines/review.next.yaml, share: 2 }\n",
      ),
      "review.next.yaml": body("1.1.0", "next"),
    });
    expect(errors(share)).toEqual([
      expect.objectContaining({ file: "pipelines/review.yaml", path: "shadow.share", code: "invalid_value" }),
    ]);
  });
});
