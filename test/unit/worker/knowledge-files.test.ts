import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placeKnowledgeFiles } from "../../../worker/run/knowledge.ts";

/**
 * An earlier attempt of the run (its setup steps, repository code) may have left RUN_DIR/knowledge
 * as a link to a host directory. The worker places the team's documents there before the run's
 * first process: a copy that followed the link would write (and chmod) host files.
 */
describe("knowledge files placed in RUN_DIR", () => {
  let dir: string;
  let runDir: string;
  let hostDir: string;
  let knowledge: Parameters<typeof placeKnowledgeFiles>[0];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-knowledge-files-"));
    runDir = join(dir, "run");
    hostDir = join(dir, "host");
    await mkdir(join(dir, "config", "knowledge"), { recursive: true });
    await mkdir(runDir);
    await mkdir(hostDir);
    const absolute = join(dir, "config", "knowledge", "backups.md");
    await writeFile(absolute, "# Backups\nRestore with pg_restore.\n");
    const documents = [{ path: "knowledge/backups.md", absolute, size: 35, mtimeMs: 0 }];
    knowledge = {
      documentCount: 1,
      documents,
      list: async () => [
        { path: "knowledge/backups.md", title: "Backups", firstLine: "# Backups", indexed_at: null },
      ],
    } as unknown as Parameters<typeof placeKnowledgeFiles>[0];
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const delivery of ["file", "browse"] as const) {
    it(`${delivery}: a link planted at RUN_DIR/knowledge is removed, never followed`, async () => {
      await symlink(hostDir, join(runDir, "knowledge"));
      await placeKnowledgeFiles(knowledge, { knowledge: { method: "none", delivery } }, runDir, () => true);
      expect(await readdir(hostDir)).toEqual([]);
      expect((await lstat(join(runDir, "knowledge"))).isDirectory()).toBe(true);
      expect(await readFile(join(runDir, "knowledge", "backups.md"), "utf8")).toContain("pg_restore");
      if (delivery === "browse")
        expect(await readFile(join(runDir, "knowledge", "CATALOG.md"), "utf8")).toContain("Backups");
    });
  }

  it("prompt and search place no files", async () => {
    for (const delivery of ["prompt", "search"] as const)
      await placeKnowledgeFiles(knowledge, { knowledge: { method: "bm25", delivery } }, runDir, () => true);
    expect(await readdir(runDir)).toEqual([]);
  });
});
