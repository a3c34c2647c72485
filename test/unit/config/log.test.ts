import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import { parseSize } from "../../../shared/config/log.ts";

const BASE = `webhooks:
  sources:
    hook:
      verify: bearer
      secret: s3cret-hook
targets:
  local:
    runtime: command
    command: ["cat"]
ask:
  targets: [local]
`;

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(extra: string) {
  const dir = await mkdtemp(join(tmpdir(), "svc-config-log-"));
  temps.push(dir);
  await writeFile(join(dir, "daemon.yaml"), BASE + extra);
  return loadConfig({ dir, env: {} });
}

describe("log: in daemon.yaml", () => {
  it("reads file, max_size and max_files, with defaults for the sizes", async () => {
    const full = await load("log:\n  file: /var/log/svc/svc.log\n  max_size: 20MiB\n  max_files: 3\n");
    expect(full.ok && full.config.log).toEqual({
      file: "/var/log/svc/svc.log",
      maxSizeBytes: 20 * 1024 * 1024,
      maxFiles: 3,
    });
    const defaults = await load("log:\n  file: /var/log/svc/svc.log\n");
    expect(defaults.ok && defaults.config.log).toEqual({
      file: "/var/log/svc/svc.log",
      maxSizeBytes: 10 * 1024 * 1024,
      maxFiles: 5,
    });
    const none = await load("");
    expect(none.ok && none.config.log).toBeUndefined();
  });

  it("reports every bad key of the block by path, with the fix, and loads nothing", async () => {
    const result = await load(
      "log:\n  file: logs/svc.log\n  max_size: 10 potatoes\n  max_files: 0\n  rotate: daily\n",
    );
    expect(result.ok).toBe(false);
    expect(result.problems.map((problem) => [problem.path, problem.severity, problem.message])).toEqual([
      [
        "log.file",
        "error",
        'daemon.yaml: "log.file" must be an absolute file path such as /var/log/svc/svc.log (each process writes its own file, e.g. svc.ingress.log) (got "logs/svc.log")',
      ],
      [
        "log.max_size",
        "error",
        'daemon.yaml: "log.max_size" must be a size of at least 1KiB such as 10MiB, 500kB or 1048576 (bytes) (got "10 potatoes")',
      ],
      ["log.max_files", "error", 'daemon.yaml: "log.max_files" must be between 1 and 1000 (got 0)'],
      [
        "log.rotate",
        "warning",
        'daemon.yaml: unknown key "log.rotate" is ignored - check its spelling; known keys here: file, max_size, max_files',
      ],
    ]);
  });

  it("requires file once the block is there", async () => {
    const result = await load("log:\n  max_files: 2\n");
    expect(result.problems.map((problem) => [problem.path, problem.code])).toEqual([
      ["log.file", "required"],
    ]);
  });

  it("parses sizes in bytes, decimal and binary units", () => {
    expect(parseSize("1048576")).toBe(1_048_576);
    expect(parseSize("500kB")).toBe(500_000);
    expect(parseSize("10MiB")).toBe(10 * 1024 * 1024);
    expect(parseSize("2 GB")).toBe(2_000_000_000);
    expect(parseSize("10 potatoes")).toBeUndefined();
    expect(parseSize("-5MB")).toBeUndefined();
  });
});
