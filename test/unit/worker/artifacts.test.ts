import { mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileArtifact } from "../../../worker/run/artifacts.ts";

/** The rendered text kept per artifact (worker/run/artifacts.ts RENDER_LIMIT) */
const LIMIT = 256 * 1024;

describe("worker: a file as an artifact row", () => {
  let dir: string;
  const entry = (name: string) => ({ invocationId: "inv_a", taskId: "task_a", name, path: join(dir, name) });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-artifacts-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a small log: its whole text, its size and its media type", async () => {
    await writeFile(join(dir, "setup-0.log"), "step ran\nünïcode\n");
    const artifact = await fileArtifact(entry("setup-0.log"));
    expect(artifact).toMatchObject({
      name: "setup-0.log",
      mediaType: "text/plain",
      size: Buffer.byteLength("step ran\nünïcode\n"),
      rendered: "step ran\nünïcode\n",
      path: join(dir, "setup-0.log"),
    });
  });

  it("a log larger than the rendered limit: the whole file's size, the text cut at the limit", async () => {
    const size = LIMIT * 3 + 17;
    await writeFile(join(dir, "big.log"), Buffer.alloc(size, "a"));
    const artifact = await fileArtifact(entry("big.log"));
    expect(artifact!.size).toBe(size);
    expect(artifact!.rendered).toBe(`${"a".repeat(LIMIT)}\n… (truncated, ${size} bytes in total)`);
  });

  // read whole, a log past 2 GiB threw ERR_FS_FILE_TOO_LARGE and the step's artifact was lost
  it("a log past 2 GiB (sparse here) is still recorded, from its first bytes and its size", async () => {
    const size = 3 * 1024 ** 3;
    await writeFile(join(dir, "huge.log"), "");
    await truncate(join(dir, "huge.log"), size);
    const artifact = await fileArtifact(entry("huge.log"));
    expect(artifact).toBeDefined();
    expect(artifact!.size).toBe(size);
    const note = `\n… (truncated, ${size} bytes in total)`;
    expect(artifact!.rendered).toBe("\0".repeat(LIMIT) + note);
  });

  it("a log of exactly the limit is not marked truncated", async () => {
    await writeFile(join(dir, "edge.log"), Buffer.alloc(LIMIT, "b"));
    const artifact = await fileArtifact(entry("edge.log"));
    expect(artifact!.size).toBe(LIMIT);
    expect(artifact!.rendered).toBe("b".repeat(LIMIT));
  });

  it("binary content is named by its size, not rendered", async () => {
    await writeFile(join(dir, "blob.bin"), Buffer.from([1, 0, 2, 0, 3]));
    const artifact = await fileArtifact(entry("blob.bin"));
    expect(artifact).toMatchObject({
      mediaType: "application/octet-stream",
      size: 5,
      rendered: "(binary, 5 bytes)",
    });
  });

  it("an empty file is an empty artifact; a missing one is none", async () => {
    await writeFile(join(dir, "empty.log"), "");
    expect(await fileArtifact(entry("empty.log"))).toMatchObject({ size: 0, rendered: "" });
    expect(await fileArtifact(entry("missing.log"))).toBeUndefined();
  });
});
