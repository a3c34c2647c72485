import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import winston from "winston";
import { addLogFile, createLogger, LogFileError, logFileFor, redactSecrets } from "../../../shared/logger.ts";
import { waitFor } from "../../support/wait-for.ts";

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-log-"));
  temps.push(dir);
  return dir;
}

function quietLogger(role: string) {
  // stdout of the test stays clean; the file transport is what is under test
  return createLogger({ role, format: "json", level: "info", stream: new PassThrough() });
}

describe("the log: block's file transport", () => {
  it("writes JSON lines with the secrets masked into <file> with the role before the extension", async () => {
    const dir = await tempDir();
    const logger = quietLogger("ingress");
    const file = addLogFile(logger, { file: join(dir, "svc.log"), maxSizeBytes: 1024 * 1024, maxFiles: 2 });
    expect(file).toBe(join(dir, "svc.ingress.log"));
    logger.info("listening", { event: "ingress.listening", port: 7420, token: "svc_live_never" });
    const text = await waitFor(async () => {
      const content = await readFile(file, "utf8").catch(() => "");
      return content.includes("\n") ? content : undefined;
    }, "the first line in the file");
    expect(text).not.toContain("svc_live_never");
    expect(JSON.parse(text.trim())).toMatchObject({
      level: "info",
      role: "ingress",
      event: "ingress.listening",
      port: 7420,
      token: "[redacted]",
    });
  });

  it("rotates at max_size and keeps at most max_files files, the newest under the configured name", async () => {
    const dir = await tempDir();
    const logger = quietLogger("worker");
    addLogFile(logger, { file: join(dir, "svc.log"), maxSizeBytes: 2048, maxFiles: 3 });
    const filler = "x".repeat(150);
    // paced like a process that logs now and then: winston's file transport rotates between writes,
    // and lines that arrive while it renames files land in the file being closed
    for (let i = 0; i < 60; i++) {
      logger.info("line", { event: "test.line", i, filler });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const read = async (name: string) =>
      (await readFile(join(dir, name), "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line).i as number);
    const files = await waitFor(async () => {
      const names = (await readdir(dir)).sort();
      return names.length === 3 && (await read("svc.worker.log")).includes(59) ? names : undefined;
    }, "three files, the last line in the newest");
    expect(files).toEqual(["svc.worker.log", "svc.worker1.log", "svc.worker2.log"]);
    const lineBytes = (await readFile(join(dir, "svc.worker2.log"), "utf8")).indexOf("\n") + 1;
    for (const name of ["svc.worker1.log", "svc.worker2.log"]) {
      const size = (await stat(join(dir, name))).size;
      expect(size, name).toBeGreaterThanOrEqual(2048);
      expect(size, name).toBeLessThanOrEqual(2048 + 2 * lineBytes);
    }
    // oldest first, no line lost between the kept files, the first lines deleted with the 4th file
    const kept = [
      ...(await read("svc.worker2.log")),
      ...(await read("svc.worker1.log")),
      ...(await read("svc.worker.log")),
    ];
    expect(kept.at(-1)).toBe(59);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, index) => kept[0]! + index));
    expect(kept[0]).toBeGreaterThan(0);
  });

  it("refuses a directory that does not exist, naming it and the fix, and creates nothing", async () => {
    const dir = await tempDir();
    const missing = join(dir, "nope", "deeper");
    expect(() =>
      addLogFile(quietLogger("ingress"), { file: join(missing, "svc.log"), maxSizeBytes: 4096, maxFiles: 2 }),
    ).toThrow(
      new LogFileError(
        `daemon.yaml: "log.file": the directory ${missing} does not exist - create it and let the svc user write there, or remove the "log" block`,
      ),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("puts the role before the extension, or at the end without one", () => {
    expect(logFileFor("/var/log/svc/svc.log", "worker")).toBe("/var/log/svc/svc.worker.log");
    expect(logFileFor("/var/log/svc/svc", "ingress")).toBe("/var/log/svc/svc.ingress");
  });
});

describe("redactSecrets as a winston format", () => {
  it("masks the same keys in any winston logger, 6 levels inside a field and not beyond", () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    const plain = winston.createLogger({
      format: winston.format.combine(redactSecrets(), winston.format.json()),
      transports: [new winston.transports.Stream({ stream })],
    });
    // a field's value wrapped in 6 objects is searched; in 7 it is not
    let six: Record<string, unknown> = { password: "six-deep" };
    for (let level = 0; level < 6; level += 1) six = { inner: six };
    let seven: Record<string, unknown> = { password: "seven-deep" };
    for (let level = 0; level < 7; level += 1) seven = { inner: seven };
    plain.info("x", { authorization: "Bearer abc", cookie: "c=1", payload: { a: 1 }, six, seven });
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ authorization: "[redacted]", cookie: "[redacted]", payload: "[redacted]" });
    expect(lines[0]).not.toContain("six-deep");
    // the bound is the one the hand-written logger had: depth 7 and beyond is not searched
    expect(lines[0]).toContain("seven-deep");
  });
});
