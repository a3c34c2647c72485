import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { readSecrets } from "../../db/secrets.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";
import { FakeAnthropic } from "../e2e/agents/fake-anthropic.ts";
import { freePort, ROOT, type Run } from "../e2e/cli/support.ts";
import type { HostedRepo } from "../e2e/outputs/fake-github.ts";
import type { FakeAppSpec } from "../e2e/outputs/fake-github-app.ts";
import { appPingPayload, deliver } from "../e2e/outputs/fake-github-hooks.ts";
import { PR_PAYLOAD } from "../e2e/outputs/pull-request.ts";
import { hasChromium, warnWithoutChromium } from "../e2e/ui/support.ts";
import { testGit } from "../support/git.ts";
import {
  engineSuiteUnavailable,
  pullTagged,
  startEngineWithImages,
  type TestEngine,
} from "../support/sandbox-engine.ts";
import { waitFor } from "../support/wait-for.ts";
import {
  clock,
  type LoopbackGitHub,
  launchBrowser,
  node24Bin,
  npmTrust,
  pressCreateApp,
  run,
  start,
  startLoopbackGitHub,
} from "./support/first-review.ts";

/**
 * Issue 54's closing-note figure: from `npm install` of the packed tarball to a posted review, as a
 * newcomer types it (docs/operations.md, "Your first review"), each command timed. Real parts only:
 * `npm pack` of this checkout installed with npm into a temporary prefix (and an empty npm cache,
 * as on a clean machine), every `svc` run from that prefix with PATH holding only the prefix's bin,
 * Node 24's bin and a directory with the system commands svc runs (SYSTEM_COMMANDS); the daemon
 * on its embedded Postgres default; a real dockerd with the agent image; a loopback GitHub (manifest form and conversion, the App's API and webhook, git over smart
 * HTTP, REST) and a loopback Anthropic; `svc setup github`'s page pressed in headless Chromium.
 * Prints one line per command typed with its duration, then the total; the images' preparation
 * (the machine's, like `svc image pull`) is timed apart.
 *
 * FIRST_REVIEW_NPM_CACHE=machine installs through this machine's npm cache instead of an empty one.
 */
const DRILL = "first-review";
/**
 * What the installed svc runs of the host's own: git for the checkout, flock (util-linux) with sh
 * and cat to hold the repository cache's lock, id for the embedded Postgres's user when root.
 */
const SYSTEM_COMMANDS = ["git", "flock", "sh", "cat", "id"];
const REPO = "acme/widgets";
const NUMBER = 12;
const THREAD = `${REPO}#${NUMBER}`;
const INSTALLATION = 54_001;
const ANTHROPIC_API_KEY = `sk-ant-first-review-${randomBytes(6).toString("hex")}`;
const BASE_FILE = 'import x from "x";\nlet name = 1;\nexport {};\n';
const HEAD_FILE = BASE_FILE.replace("let name", "let nm");
const FINDING = { path: "src/app.js", line: 2, body: "`nm` says less than `name`: keep the old name." };
const REVIEW_BODY = "One naming finding.";

const unavailable = engineSuiteUnavailable() ?? (hasChromium ? undefined : "no Chromium");
if (unavailable) console.warn(`drill ${DRILL} skipped: ${unavailable}`);
warnWithoutChromium("test/drills/first-review.test.ts");

/** A file's whole-file patch as GitHub lists it for a pull request (GET .../pulls/{n}/files). */
function patchOf(text: string): string {
  const lines = text.trimEnd().split("\n");
  return `@@ -1,${lines.length} +1,${lines.length} @@\n${lines.map((line) => ` ${line}`).join("\n")}`;
}

interface Step {
  /** what was typed (or done, for the operator's edits and GitHub's side) */
  command: string;
  ms: number;
  /** counted in the total: what the newcomer waits for */
  typed: boolean;
  note?: string;
}

describe.skipIf(unavailable)(
  `drill: ${DRILL}, from npm install of the packed tarball to a posted review`,
  () => {
    const steps: Step[] = [];
    const anthropic = new FakeAnthropic();
    const hosted: HostedRepo = { repository: { full_name: REPO, private: true }, pulls: [] };
    let work: string;
    let home: string;
    let prefix: string;
    let tarball: string;
    let engine: TestEngine;
    let loopback: LoopbackGitHub;
    let browser: BrowserContext;
    /** the shell the newcomer types in: PATH, HOME and the variables svc init asked for */
    let shell: Record<string, string>;
    let daemonUrl: string;
    let imagesMs = 0;
    let imagesCached = false;
    let packMs = 0;
    let base = "";
    let commit: (files: Record<string, string>, branch: string) => string;
    let daemonStarted = false;

    const svc = (args: string[]) => run(join(prefix, "bin", "svc"), args, shell, home);
    const typed = async (args: string[], note?: string): Promise<Run> => {
      const result = await svc(args);
      steps.push({ command: `svc ${args.join(" ")}`, ms: result.ms, typed: true, ...(note ? { note } : {}) });
      return result;
    };
    const expectOk = (result: Run): Run => {
      expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
      return result;
    };

    beforeAll(async () => {
      work = await mkdtemp(join(tmpdir(), "svc-first-review-"));
      // as root the embedded Postgres runs as the postgres user, which must be able to enter the home
      await chmod(work, 0o755);
      home = join(work, "home");
      prefix = join(work, "prefix");
      await mkdir(home);

      // the release as npm would publish it
      const packed = performance.now();
      const pack = await run(
        "npm",
        ["pack", "--pack-destination", work, "--json"],
        {
          PATH: `${node24Bin(ROOT)}:${process.env.PATH ?? ""}`,
          HOME: process.env.HOME ?? work,
          NO_COLOR: "1",
        },
        ROOT,
      );
      expectOk(pack);
      packMs = performance.now() - packed;
      tarball = join(
        work,
        (JSON.parse(pack.stdout.slice(pack.stdout.indexOf("["))) as { filename: string }[])[0]!.filename,
      );

      // the machine's part, like `svc image pull`: dockerd and the agent image on it
      const images = performance.now();
      const ready = await startEngineWithImages();
      engine = ready.engine;
      imagesCached = ready.cached;
      await pullTagged(engine, ready.registry, "agent:default");
      imagesMs = performance.now() - images;

      // the world: GitHub (with the repository and its main branch) and the model API
      await anthropic.start();
      anthropic.behave(ANTHROPIC_API_KEY, {
        kind: "script",
        note: { title: "naming", body: "this repository keeps descriptive names" },
        result: { review: { event: "COMMENT", body: REVIEW_BODY, comments: [FINDING] } },
      });
      loopback = await startLoopbackGitHub({ [REPO]: hosted });
      const checkout = join(work, "widgets");
      const git = testGit(work);
      git(["init", "--quiet", "--initial-branch=main", checkout]);
      commit = (files, branch) => {
        for (const [path, text] of Object.entries(files)) {
          const file = join(checkout, path);
          mkdirSync(dirname(file), { recursive: true });
          writeFileSync(file, text);
        }
        git(["add", "--all"], checkout);
        git(["commit", "--quiet", "-m", branch], checkout);
        const sha = git(["rev-parse", "HEAD"], checkout);
        git(
          ["push", "--quiet", "--force", loopback.git.pathOf(REPO), `${sha}:refs/heads/${branch}`],
          checkout,
        );
        return sha;
      };
      base = commit({ "src/app.js": BASE_FILE }, "main");

      browser = await launchBrowser(join(work, "chromium"));

      // the only commands the installed svc finds besides Node 24's: the system ones it runs
      const tools = join(work, "tools");
      await mkdir(tools);
      for (const command of SYSTEM_COMMANDS) await symlink(`/usr/bin/${command}`, join(tools, command));
      const port = await freePort();
      daemonUrl = `http://127.0.0.1:${port}`;
      shell = {
        PATH: `${join(prefix, "bin")}:${node24Bin(ROOT)}:${tools}`,
        HOME: home,
        NO_COLOR: "1",
        GITHUB_WEBHOOK_SECRET: randomBytes(32).toString("hex"),
        // any value until the App exists (docs/operations.md, step 2)
        GITHUB_TOKEN: "not-yet",
        ANTHROPIC_API_KEY,
        // 7420 is shared on this machine: the daemon listens on a free port, the CLI is told where
        SVC_DAEMON_URL: daemonUrl,
      };
    }, 1_800_000);

    afterAll(async () => {
      try {
        if (daemonStarted) {
          const stopped = await svc(["daemon", "stop"]);
          console.log(`[${DRILL}] cleanup: svc daemon stop → ${stopped.code}`);
          const db = await svc(["db", "stop"]);
          console.log(`[${DRILL}] cleanup: svc db stop → ${db.code} ${db.stdout.trim()}`);
        }
      } finally {
        await browser?.close().catch(() => {});
        await loopback?.close();
        await anthropic.stop();
        await engine?.stop();
        if (work) await rm(work, { recursive: true, force: true });
        printTimings();
      }
    }, 300_000);

    function printTimings(): void {
      const lines = [
        `[${DRILL}] machine (not counted): npm pack of the checkout ${clock(packMs)}; ` +
          `docker images prepared ${clock(imagesMs)} (${imagesCached ? "the loopback registry's cached images, pulled and tagged agent:default" : "built with mmdebstrap and docker build, pushed, pulled and tagged agent:default"})`,
        ...steps.map(
          (step) =>
            `[${DRILL}] ${step.typed ? "$" : "~"} ${step.command.padEnd(72)} ${clock(step.ms)}${step.note ? `  (${step.note})` : ""}`,
        ),
        `[${DRILL}] total, npm install to the posted review: ${clock(steps.reduce((sum, step) => sum + step.ms, 0))} ` +
          `(typed commands ${clock(steps.filter((step) => step.typed).reduce((sum, step) => sum + step.ms, 0))})`,
      ];
      console.log(lines.join("\n"));
    }

    it("the newcomer's path: install, init, start, the App, restart, doctor, a pull request reviewed", async () => {
      // (1) the packed tarball, installed as `npm install --global` would, into a prefix
      const cache =
        process.env.FIRST_REVIEW_NPM_CACHE === "machine"
          ? (process.env.npm_config_cache ?? join(process.env.HOME ?? "/root", ".npm"))
          : join(work, "npm-cache");
      const install = await run(
        "npm",
        ["install", "--global", "--prefix", prefix, tarball],
        {
          // npm is the machine's; the node it and the install scripts run is Node 24
          PATH: `${node24Bin(ROOT)}:${process.env.PATH ?? ""}`,
          HOME: home,
          NO_COLOR: "1",
          npm_config_cache: cache,
          npm_config_audit: "false",
          npm_config_fund: "false",
          ...npmTrust(),
        },
        home,
      );
      expectOk(install);
      steps.push({
        command: `npm install --global --prefix <p> ${tarball.split("/").at(-1)}`,
        ms: install.ms,
        typed: true,
        note: process.env.FIRST_REVIEW_NPM_CACHE === "machine" ? "machine's npm cache" : "empty npm cache",
      });
      expect(expectOk(await svc(["--version"])).stdout).toMatch(/^@svc-daemon\/svc\//);

      // (2) the review pipeline, its reviewer and daemon.yaml
      const init = expectOk(await typed(["init", "review", "--agent", "claude-code", "--repo", REPO]));
      expect(init.stdout).toContain("configuration valid: 1 pipeline, 1 source, 2 targets");

      // (3) the operator's edits of daemon.yaml that the loopback world needs
      const edits = performance.now();
      const daemonPath = join(home, ".svc", "daemon.yaml");
      const daemon = YAML.parseDocument(await readFile(daemonPath, "utf8"));
      const port = Number(new URL(daemonUrl).port);
      daemon.setIn(["server", "port"], port);
      daemon.setIn(["server", "public_url"], daemonUrl);
      daemon.setIn(["codehost", "api_url"], loopback.url);
      daemon.setIn(["targets", "claude", "base_url"], anthropic.url);
      daemon.setIn(["targets", "claude-api", "base_url"], `${anthropic.url}/v1`);
      daemon.setIn(["sandboxes", "engine"], { socket: engine.socket });
      await writeFile(daemonPath, daemon.toString());
      steps.push({
        command: "edit .svc/daemon.yaml",
        ms: performance.now() - edits,
        typed: false,
        note:
          `server.port: ${port}; server.public_url: ${daemonUrl}; codehost.api_url: ${loopback.url} (a GitHub Enterprise); ` +
          `targets.claude.base_url and targets.claude-api.base_url: the loopback Anthropic; sandboxes.engine.socket: the drill's dockerd`,
      });

      // (4) the key the App's secrets are sealed with, then the daemon, on its embedded Postgres
      expectOk(await typed(["setup", "instance-key"]));
      const started = expectOk(await typed(["daemon", "start"]));
      daemonStarted = true;
      expect(started.stdout).toContain(`listening on ${daemonUrl}`);

      // (5) svc's GitHub App, one button (without the instance key it says to make one first)
      let setup = start(join(prefix, "bin", "svc"), ["setup", "github", "--force"], shell, home);
      let setupStarted = performance.now();
      let printed = await setup.until(/Waiting for GitHub/, 60_000);
      if (!printed) {
        const code = await setup.exited;
        steps.push({
          command: "svc setup github --force",
          ms: performance.now() - setupStarted,
          typed: true,
          note: `exit ${code}: ${setup.stderr().trim().split("\n")[0]}`,
        });
        expect(setup.stderr()).toContain("svc setup instance-key");
        expectOk(await typed(["setup", "instance-key"], "as the error says"));
        setup = start(join(prefix, "bin", "svc"), ["setup", "github", "--force"], shell, home);
        setupStarted = performance.now();
        printed = await setup.until(/Waiting for GitHub/, 60_000);
      }
      expect(printed, setup.stderr()).toBeDefined();
      const address = /^ {2}(http:\/\/\S+\/ui\/setup\/github)$/m.exec(printed!)![1]!;
      expect(address).toBe(`${daemonUrl}/ui/setup/github`);
      const heading = await pressCreateApp(browser, address);
      expect(heading).toContain("created");
      expect(await setup.exited, setup.stderr()).toBe(0);
      steps.push({
        command: "svc setup github --force",
        ms: performance.now() - setupStarted,
        typed: true,
        note: "the page opened in Chromium, its button pressed, GitHub's redirect followed",
      });
      console.log(setup.stdout().replace(/^/gm, `[${DRILL}]   | `));
      expect(setup.stdout()).toMatch(/Created the GitHub App .* id \d+/);
      // GitHub pings the new App's webhook (the daemon has not read the App's secret yet), and the
      // person installs the App on the repository from the link the command printed
      const installed = performance.now();
      const app: FakeAppSpec = loopback.install(INSTALLATION, "acme", [REPO]);
      const ping = await deliver(app, "ping", appPingPayload(app));
      steps.push({
        command: "install the App on acme/widgets (GitHub's page)",
        ms: performance.now() - installed,
        typed: false,
        note: `GitHub's ping at creation was answered ${ping.status_code}`,
      });

      // (6) the daemon reads the App and the stored secrets
      expectOk(await typed(["daemon", "restart"]));

      // (7) every link, green or red with the fix
      let doctor = await typed(["doctor", "--deep"]);
      console.log(`${doctor.stdout}${doctor.stderr}`.trimEnd().replace(/^/gm, `[${DRILL}]   | `));
      if (/webhook_delivery_failed/.test(doctor.stdout + doctor.stderr)) {
        // as the doc says: redeliver the ping from the App's settings, then run the doctor again
        const again = performance.now();
        const redelivered = await deliver(app, "ping", appPingPayload(app));
        steps.push({
          command: "redeliver the ping (the App's Advanced settings)",
          ms: performance.now() - again,
          typed: false,
          note: `answered ${redelivered.status_code}`,
        });
        doctor = await typed(["doctor", "--deep"], "again, after the redelivery");
        console.log(`${doctor.stdout}${doctor.stderr}`.trimEnd().replace(/^/gm, `[${DRILL}]   | `));
      }

      // the secret GitHub signs with is the one svc stored, sealed with its instance key
      const settings = JSON.parse(await readFile(join(home, ".svc", "data", "postgres.json"), "utf8")) as {
        port: number;
        user: string;
        password: string;
      };
      const pool = new pg.Pool({
        connectionString: `postgres://${settings.user}:${encodeURIComponent(settings.password)}@127.0.0.1:${settings.port}/svc`,
        max: 1,
      });
      try {
        const stored = await readSecrets(pool, await readInstanceKey(join(home, ".svc", "instance.key")), [
          "webhook/github",
        ]);
        expect(stored.get("webhook/github")).toBe(app.webhook!.secret);
      } finally {
        await pool.end();
      }

      // (8) a pull request opened on GitHub: its pull_request.opened reaches the App's webhook
      const opened = performance.now();
      const head = commit({ "src/app.js": HEAD_FILE }, "rename");
      loopback.github.files.set(THREAD, [
        { filename: "src/app.js", status: "modified", patch: patchOf(HEAD_FILE) },
      ]);
      const [owner, name] = REPO.split("/");
      const source = PR_PAYLOAD as unknown as { pull_request: Record<string, unknown> };
      const repository = {
        ...PR_PAYLOAD.repository,
        full_name: REPO,
        name,
        owner: { login: owner },
        private: true,
      };
      const pull = {
        ...source.pull_request,
        number: NUMBER,
        state: "open",
        author_association: "MEMBER",
        head: { ref: "rename", sha: head, repo: { full_name: REPO } },
        base: { ref: "main", sha: base, repo: repository },
      };
      hosted.pulls = [pull];
      const delivery = await deliver(app, "pull_request", {
        ...PR_PAYLOAD,
        action: "opened",
        number: NUMBER,
        repository,
        installation: { id: INSTALLATION },
        pull_request: pull,
      });
      expect(delivery.status_code, delivery.status).toBe(202);
      /** the pull request's trigger as `svc trigger list` shows it (loopback needs no token) */
      const pullRequestTrigger = async () => {
        const listed = (await (await fetch(`${daemonUrl}/triggers`)).json()) as {
          triggers?: { id: string; eventName: string | null; status: string; diagnostic?: unknown }[];
        };
        return listed.triggers?.find((trigger) => trigger.eventName === "pull_request.opened");
      };
      let progressMs: number | undefined;
      const sticky = await waitFor(
        async () => {
          const comments = loopback.github.comments.get(THREAD) ?? [];
          if (comments.length > 0) progressMs ??= performance.now() - opened;
          const posted = comments.find((comment) => comment.body.includes(REVIEW_BODY));
          if (posted) return posted;
          // a run that failed ends the wait with its reason
          const trigger = await pullRequestTrigger();
          if (trigger && ["error", "discarded"].includes(trigger.status))
            throw new Error(`the pull request's trigger ended ${JSON.stringify(trigger)}`);
          return undefined;
        },
        "svc's review in the sticky comment",
        900_000,
      );
      steps.push({
        command: `open a pull request on ${THREAD} (pull_request.opened to the App's webhook)`,
        ms: performance.now() - opened,
        typed: false,
        note: `until svc's review is the sticky comment; its progress line appeared after ${clock(progressMs ?? 0)}`,
      });
      expect(sticky.body).toContain("<!-- svc:sticky:pr-review:review -->");
      expect(loopback.github.comments.get(THREAD)).toHaveLength(1);
      expect(sticky.user.login).toBe(`${app.slug}[bot]`);
      // first the progress line on the head, then the review edited into the same comment
      const writes = loopback.github.requests.filter(
        (request) => request.path.includes("/issues/") && ["POST", "PATCH"].includes(request.method),
      );
      expect(writes[0]!.method).toBe("POST");
      expect(JSON.stringify(writes[0]!.body)).toContain(
        `**pr-review** is running on commit ${head.slice(0, 7)}`,
      );
      expect(writes.at(-1)!.method).toBe("PATCH");

      // the run ends: completed, its inline finding a review on the head, the model asked with the key
      const ended = await waitFor(
        async () => {
          const trigger = await pullRequestTrigger();
          return trigger && ["completed", "error", "discarded"].includes(trigger.status)
            ? trigger
            : undefined;
        },
        "the pull request's trigger to end",
        300_000,
      );
      expect(ended.status, JSON.stringify(ended)).toBe("completed");
      const reviews = loopback.github.reviews.get(THREAD) ?? [];
      expect(reviews.map((review) => review.commit_id)).toEqual([head]);
      expect(anthropic.seen(ANTHROPIC_API_KEY, "/v1/messages").length).toBeGreaterThan(0);
    }, 3_600_000);
  },
);
