// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configDirFrom, instanceKeyPath } from "../../../shared/config/dir.ts";
import { formatProblems, isLoopbackHost } from "../../../shared/config/format.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import type { ConfigSnapshot, LoadResult } from "../../../shared/config/types.ts";

const FIXTURES = join(import.meta.dirname, "../../fixtures/config");
const EXAMPLE_REFERENCE = join(import.meta.dirname, "../../../examples/reference/.svc");
/** the variables the reference README lists; values are distinctive so a leak would be visible */
const REFERENCE_ENV = {
  DEPLOY_HOOK_TOKEN: "leak-check-deploy-7f3a",
  LINEAR_WEBHOOK_SECRET: "leak-check-linear-91bc",
  OPENAI_KEY_A: "leak-check-openai-a",
  OPENAI_KEY_B: "leak-check-openai-b",
  CHAT_BOT_TOKEN: "leak-check-chat-55",
  CI_TOKEN: "leak-check-ci-0d",
};

/** the reference configuration's GitHub App key: parsed when it loads, so a real PEM */
const APP_PRIVATE_KEY = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
}).privateKey;
const EXAMPLE_ENV = { ...REFERENCE_ENV, GITHUB_APP_ID: "123456", GITHUB_APP_PRIVATE_KEY: APP_PRIVATE_KEY };

function expectOk(result: LoadResult): ConfigSnapshot {
  if (!result.ok) throw new Error(formatProblems(result.problems));
  return result.config;
}

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function copyOf(fixture: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-config-"));
  temps.push(dir);
  await cp(join(FIXTURES, fixture), dir, { recursive: true });
  return dir;
}

describe("loadConfig on the reference configuration", () => {
  it("loads examples/reference/.svc as it stands", async () => {
    const config = expectOk(await loadConfig({ dir: EXAMPLE_REFERENCE, env: EXAMPLE_ENV }));
    expect(Object.keys(config.pipelines).sort()).toEqual([
      "deploy-notes",
      "large-pr-review",
      "nightly-triage",
      "pr-review",
      "release-announce",
    ]);
    // the orchestrated review, with its budgets as written
    expect(config.pipelines["large-pr-review"]!.orchestrator).toMatchObject({
      targets: ["gpt"],
      maxTasks: 6,
      maxParallel: 3,
      taskTimeoutMs: 15 * 60_000,
      timeoutMs: 45 * 60_000,
    });
    // a member can ask for the review from the pull request: "@svc review ..."
    expect(config.pipelines["pr-review"]!.trigger?.codehost).toContainEqual({
      events: ["issue_comment.created", "note"],
      repos: [],
      command: "review",
    });
    // the lint tool runs the operator's own biome on a path resolved inside the worktree, never npx
    expect(config.hostTools.lint).toMatchObject({
      input: { path: { type: "path", required: true } },
      exec: "/usr/local/bin/biome",
      args: ["check", "$path"],
    });
    // one review per pull request at a time, of what changed since the last one
    expect(config.pipelines["pr-review"]!.concurrency).toEqual({
      group: "pull_request",
      cancelInProgress: true,
    });
    expect(config.pipelines["pr-review"]!.setup.map((step) => step.run).join("\n")).toContain(
      "$PREVIOUS_SHA",
    );
    // a repository without clone_url, cloned from the origin of codehost.api_url; the review's
    // worktree holds what a review needs
    expect(config.repos["acme/widgets"]).toEqual({
      cloneUrl: "https://github.com/acme/widgets.git",
      configured: false,
    });
    expect(config.workspaces.repoCache).toEqual({ maxSizeBytes: 20 * 1024 ** 3 });
    expect(config.pipelines["pr-review"]!.checkout).toEqual({ submodules: false, lfs: false, paths: [] });
  });

  it("loads the copy in test/fixtures with no problems at all", async () => {
    const result = await loadConfig({ dir: join(FIXTURES, "reference"), env: REFERENCE_ENV });
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it("reports each unset variable by name and never a value", async () => {
    const result = await loadConfig({ dir: join(FIXTURES, "reference"), env: {} });
    expect(result.ok).toBe(false);
    const unset = result.problems.filter((problem) => problem.code === "env_unset");
    for (const name of Object.keys(REFERENCE_ENV)) {
      expect(
        unset.some((problem) => problem.message.includes(`environment variable ${name} is not set`)),
      ).toBe(true);
    }
    expect(unset).toHaveLength(6);
  });

  it("fills every field of the snapshot and deep-freezes it", async () => {
    const config = expectOk(await loadConfig({ dir: join(FIXTURES, "valid"), env: REFERENCE_ENV }));
    expect(config.dir).toBe(join(FIXTURES, "valid"));
    expect(config.server).toEqual({ host: "127.0.0.1", port: 7420, trustedProxies: [], loopbackStar: true });
    expect(config.webhooks.maxBodyBytes).toBe(2_097_152);
    expect(config.webhooks.sources["deploy-hook"]).toEqual({
      name: "deploy-hook",
      verify: "bearer",
      secret: { kind: "inline", value: REFERENCE_ENV.DEPLOY_HOOK_TOKEN },
    });
    expect(config.webhooks.sources.github?.secret).toEqual({ kind: "stored", name: "webhook/github" });
    expect(config.targets["local-agent"]).toMatchObject({ runtime: "command", timeoutMs: 1_200_000 });
    expect(config.targets.fast).toMatchObject({
      runtime: "openai",
      timeoutMs: 500,
      baseUrl: "http://127.0.0.1:8080/v1",
    });
    expect(config.targets.gpt?.credentials.map((credential) => credential.secret.kind)).toEqual([
      "inline",
      "inline",
      "stored",
    ]);
    expect(config.ask.targets).toEqual(["gpt", "local-agent"]);
    expect(config.knowledge.retrieval).toEqual({
      engine: "local",
      topK: 8,
      minScore: 0.2,
      rewrite: { targets: ["gpt"] },
    });
    expect(config.repos["acme/widgets"]).toEqual({
      cloneUrl: "https://github.com/acme/widgets.git",
      configured: true,
    });
    expect(config.queue.circuitBreaker?.escalate?.chat).toEqual({ bot: "releasebot", channel: "C0123456" });
    expect(config.hostTools.notify).toEqual({
      name: "notify",
      description: "Send a line to the on-call pager.",
      input: { text: { type: "string", required: true }, urgent: { type: "boolean", required: false } },
      exec: "/usr/local/bin/page",
      args: ["--urgent", "$urgent"],
      stdin: "$text",
      env: { PAGER_REGION: "eu" },
    });
    expect(config.auth?.tokens.ops).toMatchObject({
      scopes: ["admin", "host:execute:lint"],
      secret: { kind: "stored", name: "token/ops" },
    });
    expect(config.auth?.broker).toEqual({
      issuer: "https://id.example.com",
      audience: "svc",
      jwksUrl: "https://id.example.com/.well-known/jwks.json",
    });
    expect(config.worker).toEqual({ concurrency: 2, graceMs: 45_000, heartbeatMs: 10_000 });
    expect(config.workspaces).toEqual({
      checkoutRetentionDays: 30,
      transcriptRetentionDays: 90,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    });
    expect(config.members.map((member) => [member.name, member.kind])).toEqual([
      ["reviewer", "agent"],
      ["dana", "human"],
      ["releasebot", "agent"],
    ]);
    expect(config.policies["be-brief"]?.description).toBe("Keep every publication short.");
    expect(config.agents.reviewer?.policies).toEqual(["be-brief", "cite-lines"]);
    expect(config.skills.review).toMatchObject({ version: "2.0.0", principal: "pull-request-reviewer" });

    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.pipelines["pr-review"]?.trigger?.codehost)).toBe(true);
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it("normalises pipelines: inherited version, matchers, defaults", async () => {
    const config = expectOk(await loadConfig({ dir: join(FIXTURES, "valid"), env: REFERENCE_ENV }));
    const review = config.pipelines["pr-review"]!;
    expect(review.version).toBe("2.0.0");
    expect(review.file).toBe("pipelines/pr-review.yaml");
    expect(review.trigger?.codehost).toEqual([
      { events: ["pull_request.opened", "pull_request.synchronize"], repos: [] },
    ]);
    expect(review.knowledge).toEqual({ method: "bm25", delivery: "prompt" });
    expect(review.outputs).toEqual({ review: { handler: "codehost.review" } });

    const merge = config.pipelines["merge-ready"]!;
    expect(merge.version).toBe("0.9.0");
    expect(merge.trigger?.codehost).toEqual([
      { events: ["pull_request.labeled", "check_suite.completed"], repos: ["acme/widgets"] },
    ]);
    expect(merge.retainCheckout).toBe(true);
    expect(merge.args).toEqual({
      dry_run: { type: "boolean", required: false },
      attempts: { type: "number", required: false },
    });
    expect(merge.sandbox).toEqual({
      image: "agent:default",
      mounts: [{ host: "/srv/cache", container: "/cache", readOnly: true }],
    });

    const nightly = config.pipelines["nightly-triage"]!;
    expect(nightly.trigger).toBeNull();
    expect(nightly.knowledge).toEqual({ method: "hybrid" });
    expect(nightly.retainCheckout).toBe(false);

    const announce = config.pipelines["release-announce"]!;
    expect(announce.version).toBe("0.3.0");
    expect(announce.orchestrator).toEqual({
      strategy: { type: "auto" },
      guidance: "Split the announcement into a summary and a list of changes.",
      targets: ["gpt"],
      maxTasks: 8,
      maxParallel: 2,
    });
    expect(announce.outputs.announcement).toEqual({
      handler: "chat.message",
      config: { bot: "releasebot", channel: "C0123456" },
    });
  });
});

describe("rules that depend on the environment", () => {
  const hookPipeline =
    "version: 1.0.0\nagent: reviewer\ntargets: [gpt]\ninstructions: x\ntrigger:\n  webhook: [nowhere]\n";

  it("a webhook trigger without a source is a warning on loopback and an error off it", async () => {
    const dir = await copyOf("reference");
    await writeFile(join(dir, "pipelines/hook.yaml"), hookPipeline);
    const local = await loadConfig({ dir, env: REFERENCE_ENV });
    expect(local.ok).toBe(true);
    expect(local.problems.map((problem) => [problem.code, problem.severity])).toEqual([
      ["webhook_source_missing", "warning"],
    ]);

    const exposed = await loadConfig({ dir, env: { ...REFERENCE_ENV, SVC_HOST: "0.0.0.0" } });
    expect(exposed.ok).toBe(false);
    expect(exposed.problems.map((problem) => [problem.code, problem.severity])).toEqual([
      ["webhook_source_missing", "error"],
    ]);
    expect(exposed.problems[0]?.message).toContain("it binds 0.0.0.0, reachable off the machine");
  });

  it("SVC_HOST and SVC_PORT override server.host and server.port", async () => {
    const config = expectOk(
      await loadConfig({
        dir: join(FIXTURES, "reference"),
        env: { ...REFERENCE_ENV, SVC_HOST: "::1", SVC_PORT: "8088" },
      }),
    );
    expect(config.server).toEqual({ host: "::1", port: 8088, trustedProxies: [], loopbackStar: true });
    const bad = await loadConfig({
      dir: join(FIXTURES, "reference"),
      env: { ...REFERENCE_ENV, SVC_PORT: "http" },
    });
    expect(bad.problems.map((problem) => problem.path)).toEqual(["server.port"]);
    const anyFreePort = expectOk(
      await loadConfig({ dir: join(FIXTURES, "reference"), env: { ...REFERENCE_ENV, SVC_PORT: "0" } }),
    );
    expect(anyFreePort.server.port).toBe(0);
  });

  it("server.loopback_star: false is read as such; absent means true", async () => {
    const dir = await copyOf("reference");
    const daemon = join(dir, "daemon.yaml");
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(daemon, "utf8");
    await writeFile(daemon, text.replace("  port: 7420\n", "  port: 7420\n  loopback_star: false\n"));
    const config = expectOk(await loadConfig({ dir, env: REFERENCE_ENV }));
    expect(config.server.loopbackStar).toBe(false);
  });

  it("an unknown token scope is a warning, and the snapshot still loads", async () => {
    const dir = await copyOf("reference");
    const daemon = join(dir, "daemon.yaml");
    const { readFile } = await import("node:fs/promises");
    await writeFile(
      daemon,
      (await readFile(daemon, "utf8")).replace(
        "[pipelines:invoke, triggers:read]",
        "[pipelines:*, triggers:read]",
      ),
    );
    const result = await loadConfig({ dir, env: REFERENCE_ENV });
    expect(result.ok).toBe(true);
    expect(result.problems).toMatchObject([
      { code: "unknown_scope", severity: "warning", path: "auth.tokens.ci.scopes[0]", line: 81 },
    ]);
  });

  it("clamps transcriptRetentionDays to checkoutRetentionDays and defaults both", async () => {
    const dir = await copyOf("reference");
    const daemon = join(dir, "daemon.yaml");
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(daemon, "utf8");
    await writeFile(
      daemon,
      text.replace(
        "checkoutRetentionDays: 30\n  transcriptRetentionDays: 90",
        "checkoutRetentionDays: 45\n  transcriptRetentionDays: 10",
      ),
    );
    const clamped = await loadConfig({ dir, env: REFERENCE_ENV });
    expect(expectOk(clamped).workspaces).toEqual({
      checkoutRetentionDays: 45,
      transcriptRetentionDays: 45,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    });
    expect(clamped.problems.map((problem) => problem.code)).toEqual(["value_clamped"]);

    await writeFile(daemon, text.replace(/workspaces:\n.*\n.*\n/, ""));
    expect(expectOk(await loadConfig({ dir, env: REFERENCE_ENV })).workspaces).toEqual({
      checkoutRetentionDays: 30,
      transcriptRetentionDays: 90,
      repoCache: { maxSizeBytes: 20 * 1024 ** 3 },
    });
  });

  it("never prints a secret value, whatever else is wrong", async () => {
    const dir = await copyOf("reference");
    const daemon = join(dir, "daemon.yaml");
    const { readFile } = await import("node:fs/promises");
    const broken = (await readFile(daemon, "utf8"))
      .replace(
        "secret: ${DEPLOY_HOOK_TOKEN}",
        "secret: ${DEPLOY_HOOK_TOKEN}\n      secret_ref: webhook/deploy-hook",
      )
      .replace("secret: ${CI_TOKEN}", "secret: [${CI_TOKEN}]")
      .replace("token: ${CHAT_BOT_TOKEN}", "token: { value: ${CHAT_BOT_TOKEN} }")
      .replace("verify: tracker", "verify: ${LINEAR_WEBHOOK_SECRET}");
    await writeFile(daemon, broken);
    const result = await loadConfig({ dir, env: REFERENCE_ENV });
    expect(result.ok).toBe(false);
    const text = JSON.stringify(result.problems) + formatProblems(result.problems);
    for (const value of Object.values(REFERENCE_ENV)) {
      if (value === REFERENCE_ENV.LINEAR_WEBHOOK_SECRET) continue; // substituted into a non-secret enum field on purpose
      expect(text).not.toContain(value);
    }
    expect(result.problems.length).toBeGreaterThanOrEqual(4);
  });
});

describe("directory helpers", () => {
  it("configDirFrom defaults to ./.svc and honours SVC_CONFIG_DIR", () => {
    expect(configDirFrom({}, "/srv/app")).toBe("/srv/app/.svc");
    expect(configDirFrom({ SVC_CONFIG_DIR: "conf" }, "/srv/app")).toBe("/srv/app/conf");
    expect(configDirFrom({ SVC_CONFIG_DIR: "/etc/svc" }, "/srv/app")).toBe("/etc/svc");
  });

  it("instanceKeyPath defaults into the config dir", () => {
    expect(instanceKeyPath("/etc/svc", {})).toBe("/etc/svc/instance.key");
    expect(instanceKeyPath("/etc/svc", { SVC_INSTANCE_KEY_FILE: "/run/keys/svc.key" })).toBe(
      "/run/keys/svc.key",
    );
  });

  it("isLoopbackHost accepts only loopback binds", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "example.com", "::ffff:10.0.0.1", ""]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it("a missing directory is one problem naming the directory", async () => {
    const result = await loadConfig({ dir: "/nonexistent/svc-config", env: {} });
    expect(result).toEqual({
      ok: false,
      problems: [
        {
          file: ".",
          path: "",
          code: "config_dir_missing",
          severity: "error",
          message:
            "/nonexistent/svc-config: does not exist - create the configuration directory with daemon.yaml and pipelines/, or point SVC_CONFIG_DIR (or --dir) at it",
        },
      ],
    });
  });
});
