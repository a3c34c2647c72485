import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../shared/logger.ts";

function capture(options: { level?: string; format?: "json" | "pretty" }) {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
  return { logger: createLogger({ role: "test", stream, format: "json", ...options }), lines };
}

describe("logger", () => {
  it("writes one JSON line per call with level, message, role, event, fields and a timestamp", () => {
    const { logger, lines } = capture({});
    logger.info("run started", { event: "invocation.started", invocation: "inv_1", skipped: undefined });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({
      level: "info",
      message: "run started",
      role: "test",
      event: "invocation.started",
    });
    expect(line.invocation).toBe("inv_1");
    expect("skipped" in line).toBe(false);
    expect(Number.isNaN(Date.parse(line.timestamp))).toBe(false);
  });

  it("masks secret-bearing keys at any depth, and logs an Error by name and message", () => {
    const { logger, lines } = capture({});
    logger.warn("refused", {
      event: "webhook.refused",
      token: "svc_live_abc",
      headers: { Authorization: "Bearer xyz", accept: "json", nested: [{ password: "p" }] },
      error: new Error("boom"),
    });
    const text = lines[0]!;
    for (const secret of ["svc_live_abc", "Bearer xyz", '"p"']) expect(text).not.toContain(secret);
    const line = JSON.parse(text);
    expect(line.token).toBe("[redacted]");
    expect(line.headers).toEqual({
      Authorization: "[redacted]",
      accept: "json",
      nested: [{ password: "[redacted]" }],
    });
    expect(line.error).toEqual({ name: "Error", message: "boom" });
  });

  it("masks a secret-bearing key 6 levels inside a field's value", () => {
    const { logger, lines } = capture({});
    let deep: Record<string, unknown> = { token: "svc_live_deep" };
    for (let level = 0; level < 6; level += 1) deep = { inner: deep };
    logger.info("nested", { event: "test.nested", field: deep });
    expect(lines[0]).not.toContain("svc_live_deep");
  });

  it("writes nothing above its level", () => {
    const { logger, lines } = capture({ level: "warn" });
    logger.debug("d");
    logger.info("i");
    logger.warn("w");
    logger.error("e");
    expect(lines.map((line) => JSON.parse(line).message)).toEqual(["w", "e"]);
  });

  it("pretty lines carry timestamp, role, level, event, message and the other fields", () => {
    const { logger, lines } = capture({ format: "pretty" });
    logger.error("failed", { event: "worker.run_failed", invocation: "inv_2", secret: "s3cr3t" });
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\S+ test error worker\.run_failed failed \{"invocation":"inv_2","secret":"\[redacted\]"\}$/,
    );
  });
});
