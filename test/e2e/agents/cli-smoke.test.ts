import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPinnedCli } from "../../support/agent-clis.ts";
import { FakeAnthropic } from "./fake-anthropic.ts";
import { FakeResponses } from "./fake-responses.ts";

const execCli = promisify(execFile);

/** Runs a CLI with stdin closed (codex reads it for more prompt); a non-zero exit keeps its stdout. */
function run(
  bin: string,
  argv: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; timeout: number },
) {
  const running = execCli(bin, argv, options);
  running.child.stdin?.end();
  return running.catch((error: { stdout: string; code: number }) => ({
    stdout: error.stdout,
    code: error.code,
  }));
}
const RESULT = { summary: "smoke" };
const SCRIPT = { kind: "script", note: { title: "t", body: "b" }, result: RESULT } as const;

/**
 * Each pinned CLI, installed from npm, completes a prompt against its loopback model: the fakes
 * speak the protocol the real CLIs expect. No svc process is involved here.
 */
describe("the pinned agent CLIs against the loopback model APIs", () => {
  const anthropic = new FakeAnthropic();
  const responses = new FakeResponses();
  let home: string;

  beforeAll(async () => {
    await Promise.all([anthropic.start(), responses.start()]);
    anthropic.behave("sk-ant-smoke", SCRIPT);
    anthropic.behave("sk-ant-refused", { kind: "error", status: 401 });
    responses.behave("sk-oai-smoke", SCRIPT);
    responses.behave("sk-oai-refused", { kind: "error", status: 401 });
    home = await mkdtemp(join(tmpdir(), "svc-cli-smoke-"));
  }, 600_000);

  afterAll(async () => {
    await Promise.all([anthropic.stop(), responses.stop()]);
    if (home) await rm(home, { recursive: true, force: true });
  });

  const claude = async (key: string) => {
    const bin = await installPinnedCli("claude-code");
    const schema = JSON.stringify({ type: "object", properties: { summary: { type: "string" } } });
    return run(
      bin,
      ["-p", "summarise", "--output-format", "json", "--model", "claude-sonnet-4-5", "--json-schema", schema],
      {
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: home,
          ANTHROPIC_BASE_URL: anthropic.url,
          ANTHROPIC_API_KEY: key,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
          CLAUDE_CODE_MAX_RETRIES: "0",
        },
        timeout: 60_000,
      },
    );
  };

  const codex = async (key: string) => {
    const bin = await installPinnedCli("codex");
    const codexHome = join(home, "codex");
    await mkdir(codexHome, { recursive: true });
    const provider = `{name="fake",base_url="${responses.url}/v1",wire_api="responses",env_key="FAKE_KEY",request_max_retries=0,stream_max_retries=0}`;
    const argv = ["exec", "--json", "--skip-git-repo-check", "-m", "gpt-5"];
    argv.push("-c", `model_providers.fake=${provider}`, "-c", "model_provider=fake", "summarise");
    return run(bin, argv, {
      cwd: home,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CODEX_HOME: codexHome, FAKE_KEY: key },
      timeout: 60_000,
    });
  };

  it("claude -p answers with the fake's structured output, and reports a 401 as api_error_status", async () => {
    const done = JSON.parse((await claude("sk-ant-smoke")).stdout);
    expect(done).toMatchObject({ type: "result", is_error: false, structured_output: RESULT });
    expect(anthropic.seen("sk-ant-smoke", "/v1/messages")[0]!.body).toMatchObject({ stream: true });
    const refused = await claude("sk-ant-refused");
    expect(JSON.parse(refused.stdout)).toMatchObject({ is_error: true, api_error_status: 401 });
  }, 600_000);

  it("codex exec streams the fake's final message, and reports a 401 in turn.failed", async () => {
    const events = (await codex("sk-oai-smoke")).stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(events).toContainEqual({
      type: "item.completed",
      item: expect.objectContaining({ type: "agent_message", text: JSON.stringify(RESULT) }),
    });
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", usage: expect.any(Object) });
    const refused = await codex("sk-oai-refused");
    expect(refused.stdout).toMatch(/"turn\.failed".*unexpected status 401/);
  }, 600_000);
});
