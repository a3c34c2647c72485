import { mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDACTED, Redactor } from "../../../shared/redact.ts";
import { redactFileInPlace } from "../../../worker/run/redact-file.ts";

const SECRET = "sk-file-secret-0123456789abcdef";
const MiB = 1024 * 1024;

describe("worker: a large file redacted in place, in chunks", () => {
  let dir: string;
  const redactor = new Redactor([SECRET]);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-redact-file-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a secret across a chunk's end is replaced whole; the rest of the file is kept", async () => {
    const path = join(dir, "transcript.log");
    // the first secret straddles the first 1 MiB read, the second sits in the third chunk
    const before = "a".repeat(MiB - 7);
    const middle = `\n${"b".repeat(MiB + 100)}\n`;
    await writeFile(path, `${before}${SECRET}${middle}${SECRET}\ntail\n`);
    expect(await redactFileInPlace(path, redactor, 16 * 1024)).toBe(true);
    expect(await readFile(path, "utf8")).toBe(`${before}${REDACTED}${middle}${REDACTED}\ntail\n`);
    expect(await readdir(dir)).toEqual(["transcript.log"]);
  });

  it("a file without a secret is not rewritten", async () => {
    const path = join(dir, "clean.log");
    await writeFile(path, "c".repeat(2 * MiB));
    const { mtimeMs, ino } = await stat(path);
    expect(await redactFileInPlace(path, redactor, 16 * 1024)).toBe(false);
    expect(await stat(path)).toMatchObject({ mtimeMs, ino });
    expect((await readdir(dir)).sort()).toEqual(["clean.log", "transcript.log"]);
  });

  it("a link in the file's place is not followed", async () => {
    const target = join(dir, "elsewhere.txt");
    await writeFile(target, `${SECRET}\n`);
    await symlink(target, join(dir, "linked.log"));
    expect(await redactFileInPlace(join(dir, "linked.log"), redactor, 16 * 1024)).toBe(false);
    expect(await readFile(target, "utf8")).toBe(`${SECRET}\n`);
  });
});
