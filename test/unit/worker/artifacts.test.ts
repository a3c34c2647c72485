import { mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { artifactOf, fileArtifact } from "../../../worker/run/artifacts.ts";
import { openRunSecrets } from "../../../worker/run/run-secrets.ts";

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

  describe("redacted of the secrets of its run", () => {
    const KEY = "sk-artifact-credential-0123456789";
    const TOKEN = "svct_artifact_run_token_abcdef";
    const config = {
      dir: "/nonexistent",
      targets: {
        t: {
          name: "t",
          runtime: "command",
          command: ["x"],
          timeoutMs: 1000,
          credentials: [{ name: "c", secret: { kind: "inline", value: KEY } }],
        },
      },
    } as unknown as ConfigSnapshot;
    const inRun = (name: string) => ({ ...entry(name), invocationId: "inv_redact" });

    it("a run's credential and token are replaced by the marker, also across the stored text's cut", async () => {
      const secrets = openRunSecrets("inv_redact", {
        config,
        secrets: await CredentialSecrets.resolve(config, undefined as unknown as pg.Pool, {}),
      });
      try {
        secrets.add(TOKEN);
        await writeFile(join(dir, "leak.log"), `key=${KEY}\n${TOKEN}\n`);
        expect((await fileArtifact(inRun("leak.log")))!.rendered).toBe(`key=[redacted]\n[redacted]\n`);
        // the token begins 5 bytes before the cut: no prefix of it is kept, the marker is cut instead
        const text = `${"a".repeat(LIMIT - 5)}${TOKEN}${"b".repeat(100)}`;
        const rendered = artifactOf(inRun("cut.log"), Buffer.from(text)).rendered!;
        const note = `\n… (truncated, ${text.length} bytes in total)`;
        expect(rendered.endsWith(`aaaaa[reda${note}`)).toBe(true);
        expect(rendered.length).toBe(LIMIT + note.length);
        expect(rendered).not.toContain(TOKEN.slice(0, 8));
      } finally {
        secrets.close();
      }
    });

    it("once the run is closed its token is no longer known (the worker's credentials still are)", async () => {
      await writeFile(join(dir, "after.log"), `${KEY} ${TOKEN}`);
      expect((await fileArtifact(inRun("after.log")))!.rendered).toBe(`[redacted] ${TOKEN}`);
    });
  });
});
