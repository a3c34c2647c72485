import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, startApi } from "./support.ts";

const STAR = "host-tool-star-token";
// in the ingress's own environment: a host tool is started without it
const INGRESS_SECRET = "ingress-only-secret-4b1d";

/**
 * The contract's host tool: `exec`, `args`, and the optional `stdin` and `env`. Loaded from a real
 * daemon.yaml and called through the real ingress (its API route and the tool protocol), the tool
 * reads its stdin with the caller's input placed in it as data, and sees the declared env.
 */
describe("a host tool's stdin and env, at execution", () => {
  let dir: string;
  let database: TestDatabase;
  let api: ApiHarness;
  let marker: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-host-tool-io-"));
    marker = join(dir, "injected");
    await mkdir(join(dir, "bin"));
    // prints what it read on stdin, then its environment, one NAME=value a line
    const tool = join(dir, "bin", "echo-in");
    await writeFile(tool, '#!/bin/sh\necho "stdin:"\ncat\necho "env:"\nexec /usr/bin/env\n');
    await chmod(tool, 0o755);
    await writeFile(
      join(dir, "daemon.yaml"),
      `targets:
  local: { runtime: command, command: ["/bin/cat"] }
ask:
  targets: [local]
auth:
  tokens:
    star: { scopes: ["*"], secret: "\${STAR_TOKEN}" }
host_tools:
  echo-in:
    description: Echo the request on stdin and the tool's environment
    input:
      text: { type: string, required: true }
    exec: ${tool}
    args: []
    stdin: "request: $text\\nend\\n"
    env:
      GREETING: hello from the operator
      LINT_MODE: strict
`,
    );
    const loaded = await loadConfig({ dir, env: { STAR_TOKEN: STAR } });
    if (!loaded.ok) throw new Error(loaded.problems.map((problem) => problem.message).join("\n"));
    expect(loaded.config.hostTools["echo-in"]).toMatchObject({
      stdin: "request: $text\nend\n",
      env: { GREETING: "hello from the operator", LINT_MODE: "strict" },
    });
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    process.env.SVC_TEST_INGRESS_SECRET = INGRESS_SECRET;
    api = await startApi(database.url, loaded.config);
  });

  afterAll(async () => {
    delete process.env.SVC_TEST_INGRESS_SECRET;
    await api?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // shell syntax and another placeholder in the input: data for the tool, never run or substituted
  const text = () => `two words $(touch ${marker}) \`touch ${marker}\` $GREETING`;

  function check(stdout: string) {
    const [stdin, env] = stdout.split("env:\n") as [string, string];
    // stdin carries the input as data, placeholder filled, nothing evaluated
    expect(stdin).toBe(`stdin:\nrequest: ${text()}\nend\n`);
    const vars = new Map(
      env
        .trimEnd()
        .split("\n")
        .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );
    expect(vars.get("GREETING")).toBe("hello from the operator");
    expect(vars.get("LINT_MODE")).toBe("strict");
    expect(vars.has("PATH")).toBe(true);
    // declared env and svc's own PATH only: nothing of the ingress's environment
    expect(vars.has("SVC_TEST_INGRESS_SECRET")).toBe(false);
    expect(stdout).not.toContain(INGRESS_SECRET);
  }

  it("POST /host-tools/:name feeds the filled stdin and the declared env", async () => {
    const response = await api.request("POST", "/host-tools/echo-in", {
      token: STAR,
      body: { input: { text: text() } },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { exitCode: number; stdout: string };
    expect(body.exitCode).toBe(0);
    check(body.stdout);
    await expect(readFile(marker)).rejects.toThrow();
  });

  it("the tool protocol's host_echo-in does the same", async () => {
    const response = await api.request("POST", "/mcp", {
      token: STAR,
      headers: { accept: "application/json, text/event-stream" },
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "host_echo-in", arguments: { text: text() } },
      },
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      result: { isError?: boolean; structuredContent: { exitCode: number; stdout: string } };
    };
    expect(answer.result.isError).toBeFalsy();
    expect(answer.result.structuredContent.exitCode).toBe(0);
    check(answer.result.structuredContent.stdout);
    await expect(readFile(marker)).rejects.toThrow();
  });
});
