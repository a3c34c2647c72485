// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { pinnedVersion } from "../../../shared/agent-clis/pins.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { freePort } from "../../support/free-port.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { FakeAnthropic } from "../agents/fake-anthropic.ts";
import {
  childEnv,
  configDir as ingressDir,
  type RunningIngress,
  startIngressProcess,
} from "../ingress/processes.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import type { FakeAppSpec } from "../outputs/fake-github-app.ts";
import { appPingPayload, deliver } from "../outputs/fake-github-hooks.ts";
import { rsaKeyPair } from "../outputs/github-app-bed.ts";
import { type FakeEngine, startFakeEngine } from "./fake-engine.ts";
import { svc } from "./support.ts";

const WIDGETS = "acme/widgets";
/** acme has an installation, but not of this repository */
const HIDDEN = "acme/hidden";
/** installed on beta's installation, which accepted pull_requests: read only and no push events */
const TOOLS = "beta/tools";
const WEBHOOK_SECRET = "deep-doctor-webhook-secret-7d1c";
const GOOD_KEY = "sk-ant-api03-deepDoctorGood0000000000000000000001";
const BAD_KEY = "sk-ant-api03-deepDoctorRevoked000000000000000000002";
const CLAUDE_VERSION = pinnedVersion("claude-code");

interface Report {
  ok: boolean;
  checks: { name: string; status: string; detail: string }[];
  problems: { file: string; path: string; code: string; severity: string; message: string }[];
}

const DEEP = ["app-installs", "webhook", "sandbox", "target-keys", "agent-in-image"];

/**
 * `svc doctor --deep` proves the chain to the first pull request (issue 54): the real CLI against a
 * loopback GitHub that answers the App's installations (with their permissions and events) and its
 * webhook's deliveries, a real `svc ingress` that GitHub's ping is delivered to (svc's own record),
 * a loopback Anthropic API behind svc's own model gateway, and a Docker Engine API on a unix socket.
 */
describe("svc doctor --deep: the App, the webhook, the sandbox engine and images, the targets' keys, the CLI in its image", () => {
  const key = rsaKeyPair();
  let database: TestDatabase;
  let ingress: RunningIngress;
  let git: GitHost;
  let github: FakeGitHub;
  let model: FakeAnthropic;
  let engine: FakeEngine;
  let bare: FakeEngine;
  let elsewhere: Server;
  let elsewhereUrl: string;
  let daemonUrl: string;
  let bin: string;
  const dirs: string[] = [];
  const apps: Record<string, FakeAppSpec> = {};

  const app = (
    id: number,
    slug: string,
    webhook: FakeAppSpec["webhook"],
    installations: FakeAppSpec["installations"] = [{ id: id * 10 + 1, account: "acme", repos: [WIDGETS] }],
  ): FakeAppSpec => {
    const spec: FakeAppSpec = { id, slug, publicKey: key.publicKey, installations, webhook };
    apps[slug] = spec;
    return spec;
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const port = await freePort();
    const ingressConfig = await ingressDir({
      "daemon.yaml": `webhooks:
  sources:
    github:
      verify: codehost
      secret: \${GH_SECRET}
targets:
  local: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [local]
`,
    });
    dirs.push(ingressConfig);
    ingress = await startIngressProcess(
      childEnv({
        SVC_CONFIG_DIR: ingressConfig,
        SVC_DATABASE_URL: database.url,
        SVC_PORT: String(port),
        GH_SECRET: WEBHOOK_SECRET,
      }),
    );
    const hook = { url: `${ingress.url}/webhooks/github`, secret: WEBHOOK_SECRET };
    // a server that answers every delivery 202 without being svc
    elsewhere = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(202, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;

    app(4242, "svc-deep", hook, [
      { id: 61, account: "acme", repos: [WIDGETS] },
      {
        id: 62,
        account: "beta",
        repos: [TOOLS],
        permissions: {
          contents: "read",
          pull_requests: "read",
          issues: "write",
          checks: "read",
          metadata: "read",
        },
        events: ["pull_request", "issue_comment", "pull_request_review_comment"],
      },
    ]);
    app(4243, "svc-quiet", hook);
    app(4244, "svc-wrong-secret", { url: hook.url, secret: "not-the-secret-svc-has" });
    app(4245, "svc-elsewhere", { url: `${elsewhereUrl}/webhooks/github`, secret: WEBHOOK_SECRET });

    let issued: FakeGitHub | undefined;
    git = gitHost({
      authorize: (token) => (issued?.exchanges.some((entry) => entry.token === token) ? true : "unknown"),
    });
    github = await startFakeGitHub({ users: {}, apps: Object.values(apps), git });
    issued = github;
    for (const repo of [WIDGETS, HIDDEN, TOOLS]) git.createRepo(repo);

    // GitHub pings each App's webhook once it is set
    for (const slug of ["svc-deep", "svc-wrong-secret", "svc-elsewhere"])
      await deliver(apps[slug]!, "ping", appPingPayload(apps[slug]!));
    expect(apps["svc-deep"]!.deliveries![0]!.status_code).toBe(202);
    expect(apps["svc-wrong-secret"]!.deliveries![0]!.status_code).toBe(401);

    model = new FakeAnthropic();
    await model.start();
    model.behave(GOOD_KEY, {
      kind: "script",
      note: { title: "unused", body: "unused" },
      result: "OK",
      usage: { input_tokens: 12, output_tokens: 1 },
    });

    const engines = await mkdtemp(join(tmpdir(), "svc-e2e-deep-engine-"));
    dirs.push(engines);
    mkdirSync(join(engines, "full"));
    mkdirSync(join(engines, "bare"));
    engine = await startFakeEngine(join(engines, "full"), {
      "agent:default": { commands: { claude: { stdout: `${CLAUDE_VERSION} (Claude Code)\n` } } },
    });
    // agent:default is not pulled yet; a variant without the CLI is there
    bare = await startFakeEngine(join(engines, "bare"), { "agent:slim": { user: "node", commands: {} } });

    // the host's claude, for the agent-clis check of plain doctor
    bin = await mkdtemp(join(tmpdir(), "svc-e2e-deep-bin-"));
    dirs.push(bin);
    writeFileSync(join(bin, "claude"), `#!/bin/sh\necho '${CLAUDE_VERSION} (Claude Code)'\n`);
    chmodSync(join(bin, "claude"), 0o755);
    daemonUrl = `http://127.0.0.1:${await freePort()}`;
  }, 120_000);

  afterAll(async () => {
    if (ingress) {
      ingress.child.kill("SIGTERM");
      await ingress.exited;
    }
    await github?.close();
    git?.close();
    await model?.stop();
    await engine?.close();
    await bare?.close();
    await new Promise((resolve) => (elsewhere ? elsewhere.close(resolve) : resolve(undefined)));
    await database?.drop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const configDir = async (options: {
    appId?: number;
    repos?: string[];
    socket?: string;
    image?: string;
    keyEnv?: string;
    /** more of daemon.yaml's targets */
    targets?: string;
  }): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "svc-e2e-doctor-deep-"));
    dirs.push(dir);
    mkdirSync(join(dir, "pipelines"));
    mkdirSync(join(dir, "agents", "reviewer"), { recursive: true });
    writeFileSync(
      join(dir, "agents", "reviewer", "PERSONA.md"),
      "---\ndescription: Reviews.\n---\nYou review.\n",
    );
    writeFileSync(
      join(dir, "pipelines", "review.yaml"),
      `version: 1.0.0
agent: reviewer
targets: [claude]
trigger:
  codehost:
    - events: [pull_request.opened]
sandbox:
  image: ${options.image ?? "agent:default"}
instructions: Review the pull request.
`,
    );
    writeFileSync(
      join(dir, "daemon.yaml"),
      `webhooks:
  sources:
    github:
      verify: codehost
      secret: \${GH_SECRET}
targets:
  echo: { runtime: command, command: ["cat"], timeout: 1m }
  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    base_url: ${model.url}
    credentials:
      - name: main
        secret: \${${options.keyEnv ?? "ANTHROPIC_KEY"}}
${options.targets ?? ""}ask:
  targets: [echo]
repos:
${(options.repos ?? [WIDGETS]).map((repo) => `  ${repo}: {}`).join("\n")}
codehost:
  api_url: ${github.url}
  app:
    id: ${options.appId ?? 4242}
    private_key: "\${GITHUB_APP_PRIVATE_KEY}"
sandboxes:
  engine:
    socket: ${options.socket ?? engine.socket}
  registry: registry.example.com/svc
  images:
    slim: { pull: "registry.example.com/svc/agent:slim" }
`,
    );
    return dir;
  };

  const doctor = async (dir: string, options: { deep?: boolean; env?: Record<string, string> } = {}) => {
    const run = await svc(["doctor", "--json", ...(options.deep === false ? [] : ["--deep"]), "--dir", dir], {
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      HOME: dir,
      SVC_DAEMON_URL: daemonUrl,
      SVC_DATABASE_URL: database.url,
      GH_SECRET: WEBHOOK_SECRET,
      ANTHROPIC_KEY: GOOD_KEY,
      BAD_ANTHROPIC_KEY: BAD_KEY,
      GITHUB_APP_PRIVATE_KEY: key.privateKey,
      ...options.env,
    });
    // no key the doctor held, nor a token GitHub issued it, is ever printed
    const secrets = [
      GOOD_KEY,
      BAD_KEY,
      WEBHOOK_SECRET,
      key.privateKey.split("\n")[1]!,
      ...github.exchanges.map((entry) => entry.token),
    ];
    for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
    const report = JSON.parse(run.stdout) as Report;
    const check = (name: string) => report.checks.find((entry) => entry.name === name);
    const problems = (code: string) => report.problems.filter((problem) => problem.code === code);
    return { run, report, check, problems };
  };

  it("is green when every link holds, each line saying what it proved", async () => {
    const before = { model: model.requests.length, engine: engine.containers.length };
    const dir = await configDir({});
    const { run, report, check } = await doctor(dir);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(run.code).toBe(0);
    for (const name of DEEP) expect(check(name)?.status, name).toBe("ok");
    expect(check("app-installs")!.detail).toBe(
      `GitHub App svc-deep (4242): ${WIDGETS}: permissions and events ok`,
    );
    const ping = apps["svc-deep"]!.deliveries![0]!;
    expect(check("webhook")!.detail).toMatch(
      new RegExp(
        `^last delivery ping ${ping.guid} ${ping.delivered_at}: 202, recorded by svc as trigger trg_\\S+ \\(github, its database\\)$`,
      ),
    );
    expect(check("sandbox")!.detail).toBe(
      `unix://${engine.socket}, engine 27.5.1 (API 1.47): agent:default present`,
    );
    expect(check("target-keys")!.detail).toBe("claude/main accepted (13 tokens)");
    expect(check("agent-in-image")!.detail).toBe(`agent:default: claude ${CLAUDE_VERSION} (pinned)`);

    // one request for one token, with the real key added by the gateway (never its own token)
    const asked = model.requests.slice(before.model);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ method: "POST", path: "/v1/messages", key: GOOD_KEY });
    expect(asked[0]!.body).toMatchObject({ model: "claude-sonnet-4-5", max_tokens: 1 });
    // the CLI ran in a container as a run's would: no network, no capability, removed after
    const made = engine.containers.slice(before.engine);
    expect(made).toHaveLength(1);
    expect(made[0]!.body).toMatchObject({
      Image: "agent:default",
      Entrypoint: ["claude"],
      Cmd: ["--version"],
      User: "1000:1000",
      HostConfig: { NetworkMode: "none", CapDrop: ["ALL"], ReadonlyRootfs: true },
    });
    expect(made[0]!.removed).toBe(true);
  });

  it("a claude-code target only sandboxed pipelines run is looked for in their image, not on this host", async () => {
    // no claude on this PATH: the pipeline's CLI runs in agent:default, which the deep checks prove
    const { check } = await doctor(await configDir({}), { env: { PATH: process.env.PATH ?? "" } });
    expect(check("agent-clis")).toMatchObject({
      status: "skipped",
      detail: "claude runs only in sandboxed pipelines' images (svc doctor --deep checks them there)",
    });
    expect(check("agent-in-image")?.status).toBe("ok");
  });

  it("without --deep, none of it runs", async () => {
    const before = {
      github: github.requests.length,
      model: model.requests.length,
      engine: engine.requests.length,
    };
    const dir = await configDir({});
    const { report } = await doctor(dir, { deep: false });
    expect(report.checks.map((entry) => entry.name).filter((name) => DEEP.includes(name))).toEqual([]);
    const paths = github.requests.slice(before.github).map((request) => request.path);
    expect(paths).not.toContain("/app/hook/deliveries");
    expect(model.requests.length).toBe(before.model);
    expect(engine.requests.length).toBe(before.engine);
  });

  it("a configured repository the App is not installed on is app_not_installed, naming it and where to add it", async () => {
    const dir = await configDir({ repos: [WIDGETS, HIDDEN] });
    const { run, check, problems } = await doctor(dir);
    expect(run.code).toBe(1);
    expect(check("app-installs")).toMatchObject({ status: "error" });
    expect(check("app-installs")!.detail).toContain(`${HIDDEN} not installed`);
    expect(problems("app_not_installed")).toEqual([
      {
        file: "daemon.yaml",
        line: null,
        column: null,
        path: `repos.${HIDDEN}`,
        code: "app_not_installed",
        severity: "error",
        message: `daemon.yaml: "repos.${HIDDEN}": GitHub App svc-deep (4242) is not installed on ${HIDDEN}: svc can neither read it as the App nor post to it - add ${HIDDEN} to the repositories of its installation on acme (${github.url}/organizations/acme/settings/installations/61, "Repository access")`,
      },
    ]);
    expect(problems("app_permission_missing")).toEqual([]);

    // the human output: one line per link, the broken one red with its fix below
    const human = await svc(["doctor", "--deep", "--dir", dir], {
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      HOME: dir,
      SVC_DAEMON_URL: daemonUrl,
      SVC_DATABASE_URL: database.url,
      GH_SECRET: WEBHOOK_SECRET,
      ANTHROPIC_KEY: GOOD_KEY,
      GITHUB_APP_PRIVATE_KEY: key.privateKey,
    });
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(
      `error    app-installs   GitHub App svc-deep (4242): ${HIDDEN} not installed; ${WIDGETS}: permissions and events ok\n`,
    );
    expect(human.stdout).toContain("ok       target-keys    claude/main accepted (13 tokens)\n");
    expect(human.stdout).toContain(
      `ok       agent-in-image agent:default: claude ${CLAUDE_VERSION} (pinned)\n`,
    );
    expect(human.stdout).toContain(`[app_not_installed]`);
    expect(human.stdout).toContain(`add ${HIDDEN} to the repositories of its installation on acme`);
    expect(human.stdout + human.stderr).not.toContain(GOOD_KEY);
  });

  it("an installation with pull_requests: read is app_permission_missing naming pull_requests: write, the settings page and the acceptance", async () => {
    const dir = await configDir({ repos: [WIDGETS, TOOLS] });
    const { run, check, problems } = await doctor(dir);
    expect(run.code).toBe(1);
    expect(check("app-installs")).toEqual({
      name: "app-installs",
      status: "error",
      detail: `GitHub App svc-deep (4242): ${WIDGETS}: permissions and events ok; ${TOOLS}: lacks pull_requests: write (it has read), events push`,
    });
    const [missing] = problems("app_permission_missing");
    expect(missing).toMatchObject({ path: `repos.${TOOLS}`, severity: "error" });
    expect(missing!.message).toBe(
      `daemon.yaml: "repos.${TOOLS}": installation 62 (beta) of GitHub App svc-deep (4242) lacks pull_requests: write (it has read), which serves ${TOOLS} - give the App "Pull requests: Read and write" on its settings page (${github.url}/organizations/acme/settings/apps/svc-deep/permissions, "Permissions & events"), then the installation's owner must accept the new permissions (${github.url}/organizations/beta/settings/installations/62)`,
    );
    expect(problems("app_event_missing").map((problem) => problem.message)).toEqual([
      expect.stringContaining("is not subscribed to push, which serves beta/tools: svc never hears of them"),
    ]);
  });

  it("an App GitHub has delivered nothing for is webhook_no_delivery", async () => {
    const dir = await configDir({ appId: 4243 });
    const { run, check, problems } = await doctor(dir);
    expect(run.code).toBe(1);
    expect(check("webhook")).toEqual({ name: "webhook", status: "error", detail: "no delivery yet" });
    expect(problems("webhook_no_delivery").map((problem) => problem.message)).toEqual([
      `daemon.yaml: GitHub has delivered nothing to the webhook of GitHub App 4243 yet - set the App's Webhook URL to https://<server.public_url>/webhooks/github with the secret of webhooks.sources.github (the App's settings page, "General"), then send its ping again ("Advanced" > "Recent Deliveries" > "Redeliver"), or install the App on a repository`,
    ]);
    // the rest of the chain is unaffected
    expect(check("app-installs")?.status).toBe("ok");
  });

  it("a delivery svc refused is webhook_delivery_failed naming the status and the secret; one svc never saw is webhook_not_recorded", async () => {
    const refused = await doctor(await configDir({ appId: 4244 }));
    const delivery = apps["svc-wrong-secret"]!.deliveries![0]!;
    expect(refused.check("webhook")).toMatchObject({ status: "error" });
    expect(refused.problems("webhook_delivery_failed").map((problem) => problem.message)).toEqual([
      `daemon.yaml: GitHub's last ping delivery ${delivery.guid} of ${delivery.delivered_at} did not reach svc: HTTP 401 (Invalid HTTP Response: 401) - svc refused its signature: a ping sent when the App was created, before the daemon restarted with its secret, is refused so: redeliver it; if it is refused again, the App's webhook secret is not the secret of webhooks.sources.github - set the same secret on both (the App's settings page, "Webhook secret"; svc setup webhook github --secret-env <ENV_NAME>); then redeliver it ("Advanced" > "Recent Deliveries" on the App's settings page)`,
    ]);

    const lost = await doctor(await configDir({ appId: 4245 }));
    expect(lost.check("webhook")).toMatchObject({ status: "error" });
    expect(lost.problems("webhook_not_recorded").map((problem) => problem.message)).toEqual([
      expect.stringMatching(
        /was answered 202, but svc \(its database\) holds no trigger with that delivery id from webhooks\.sources\.github - the App's Webhook URL reaches another server than this svc/,
      ),
    ]);
  });

  it("without SVC_DATABASE_URL, svc's record of the ping is read from the daemon", async () => {
    const dir = await configDir({});
    const { check } = await doctor(dir, { env: { SVC_DATABASE_URL: "", SVC_DAEMON_URL: ingress.url } });
    expect(check("webhook")).toMatchObject({ status: "ok" });
    expect(check("webhook")!.detail).toContain(`(github, the daemon at ${ingress.url})`);
  });

  it("a key the model API refuses is target_key_refused, naming the target, the credential and the fix, never the key", async () => {
    const before = model.requests.length;
    const closed = await freePort();
    const dir = await configDir({
      keyEnv: "BAD_ANTHROPIC_KEY",
      targets: `  gone:
    runtime: openai
    base_url: http://127.0.0.1:${closed}/v1
    model: gpt-5-mini
    credentials: [{ name: spare, secret: "\${ANTHROPIC_KEY}" }]
`,
    });
    const { run, check, problems } = await doctor(dir);
    expect(run.code).toBe(1);
    expect(check("target-keys")).toEqual({
      name: "target-keys",
      status: "error",
      detail: "claude/main refused (401), gone/spare unreachable",
    });
    // a model API that does not answer is no refused key
    expect(problems("target_request_failed").map((problem) => problem.message)).toEqual([
      `daemon.yaml: "targets.gone.credentials[0]" (spare): svc's gateway could not reach the model API of target gone at http://127.0.0.1:${closed}/v1 (ECONNREFUSED) - check that this host reaches it (DNS, proxy, firewall) and "targets.gone.base_url"`,
    ]);
    expect(problems("target_key_refused")).toEqual([
      {
        file: "daemon.yaml",
        line: null,
        column: null,
        path: "targets.claude.credentials[0]",
        code: "target_key_refused",
        severity: "error",
        message: `daemon.yaml: "targets.claude.credentials[0]" (main): the model API of target claude at ${model.url} refused the key on a one-token request through svc's gateway: HTTP 401 (authentication_error: invalid x-api-key); runs mark it dead and fail over - replace it: its secret in daemon.yaml (or the variable it substitutes): set a key the API accepts, then restart the daemon`,
      },
    ]);
    expect(model.requests.slice(before).map((request) => request.key)).toEqual([BAD_KEY]);
  });

  it("an engine that does not answer is sandbox_engine_unreachable naming its socket; the CLI in the image is then not checked", async () => {
    const socket = join(tmpdir(), "svc-e2e-no-such-dir", "docker.sock");
    const dir = await configDir({ socket });
    const { run, check, problems } = await doctor(dir);
    expect(run.code).toBe(1);
    expect(check("sandbox")).toEqual({
      name: "sandbox",
      status: "error",
      detail: `unix://${socket} does not answer: agent:default not checked`,
    });
    expect(problems("sandbox_engine_unreachable").map((problem) => problem.message)).toEqual([
      `daemon.yaml: the container engine at unix://${socket} did not answer (ENOENT) - start the engine (dockerd or podman's API service), or point "sandboxes.engine.socket" in daemon.yaml (or DOCKER_HOST) at its socket; the images of agent:default were not checked`,
    ]);
    expect(check("agent-in-image")).toEqual({
      name: "agent-in-image",
      status: "skipped",
      detail: `not checked: the container engine at unix://${socket} does not answer (see sandbox)`,
    });
  });

  it("an image not on the engine is sandbox_image_missing; an image without the CLI is agent_cli_missing", async () => {
    const missing = await doctor(await configDir({ socket: bare.socket }));
    expect(missing.check("sandbox")).toMatchObject({ status: "error" });
    expect(missing.problems("sandbox_image_missing").map((problem) => problem.message)).toEqual([
      `daemon.yaml: agent:default is not on the container engine at unix://${bare.socket}: every run of review fails sandbox_image_missing - run "svc image pull" (it fetches registry.example.com/svc/agent:default)`,
    ]);
    expect(missing.check("agent-in-image")).toEqual({
      name: "agent-in-image",
      status: "skipped",
      detail: "agent:default: claude not checked (no image, see sandbox)",
    });

    const slim = await doctor(await configDir({ socket: bare.socket, image: "agent:slim" }));
    expect(slim.check("sandbox")).toMatchObject({ status: "ok" });
    expect(slim.check("agent-in-image")).toMatchObject({ status: "error" });
    const [cli] = slim.problems("agent_cli_missing");
    expect(cli).toMatchObject({ path: "targets.claude", severity: "error" });
    expect(cli!.message).toBe(
      `daemon.yaml: "claude --version" does not run in agent:slim, which review on target claude runs in: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "claude": executable file not found in $PATH: unknown - install @anthropic-ai/claude-code@${CLAUDE_VERSION} in the image registry.example.com/svc/agent:slim, then remove agent:slim from the engine (docker image rm agent:slim) so the next run makes it anew`,
    );
    // it ran as the image's own user, and its container is gone
    const made = bare.containers.at(-1)!;
    expect(made.body).toMatchObject({ Image: "agent:slim", User: "node" });
    expect(made.removed).toBe(true);
  });
});
