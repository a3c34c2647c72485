import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspacePaths } from "../../../shared/workspace-layout.ts";
import { removeCheckout } from "../../../worker/run/workspace.ts";

describe("worker: removing a run's checkout", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-checkout-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("removes an empty checkout, a checkout with files in it, and accepts one already gone", async () => {
    const empty = workspacePaths(dir, "run_empty", "inv_a");
    await mkdir(empty.checkout, { recursive: true });
    await removeCheckout(empty);
    const full = workspacePaths(dir, "run_full", "inv_b");
    await mkdir(join(full.checkout, "src", "deep"), { recursive: true });
    await writeFile(join(full.checkout, "src", "deep", "file.txt"), "kept by a step");
    await removeCheckout(full);
    await removeCheckout(workspacePaths(dir, "run_none", "inv_c"));
    expect(existsSync(empty.checkout)).toBe(false);
    expect(existsSync(full.checkout)).toBe(false);
    expect(existsSync(empty.root)).toBe(true);
  });
});
