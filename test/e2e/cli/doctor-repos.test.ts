// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatBytes } from "../../../cli/doctor/repo-cache.ts";
import { cacheRoot, diskUsage } from "../../../shared/repo-cache.ts";
import { freePort } from "../../support/free-port.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { rsaKeyPair } from "../outputs/github-app-bed.ts";
import { svc } from "./support.ts";

const APP_ID = 4242;
/** private; the App is installed on it and the git host lets its tokens read it */
const WIDGETS = "acme/widgets";
/** public; the App is not installed on it: read anonymously */
const PUBLIC = "acme/public";
/** private; the App is not installed on it: nobody of svc's may read it */
const HIDDEN = "acme/hidden";
/** private; the App is installed on it, but the git host refuses the App's tokens (401) */
const REVOKED = "acme/revoked";
/** a long-lived token that may read acme/widgets, and one the host does not know */
const GOOD_TOKEN = "github_pat_doctorReader000000000000001";
const BAD_TOKEN = "github_pat_doctorRevoked00000000000002";

interface Report {
  ok: boolean;
  checks: { name: string; status: string; detail: string }[];
  problems: { file: string; path: string; code: string; severity: string; message: string }[];
}

/**
 * `svc doctor` reads each configured repository as a run's checkout would (issue 52): the real CLI
 * against a loopback GitHub (the App's installation tokens) with git on the same origin through the
 * real `git http-backend` (test/support/git-smart-http.ts), and reports the worker host's
 * repository cache.
 */
describe("svc doctor: repositories and the repository cache", () => {
  let git: GitHost;
  let github: FakeGitHub;
  let daemonUrl: string;
  let closedPort: number;
  const app = rsaKeyPair();
  const dirs: string[] = [];

  beforeAll(async () => {
    let issued: FakeGitHub | undefined;
    git = gitHost({
      authorize(token, repo) {
        if (token === GOOD_TOKEN) return repo === WIDGETS;
        const exchange = issued?.exchanges.find((entry) => entry.token === token);
        if (!exchange || repo === REVOKED) return "unknown";
        return exchange.repositories?.includes(repo.split("/")[1]!) ?? true;
      },
    });
    github = await startFakeGitHub({
      users: {},
      apps: [
        {
          id: APP_ID,
          slug: "svc-doctor",
          publicKey: app.publicKey,
          installations: [{ id: 61, account: "acme", repos: [WIDGETS, REVOKED] }],
        },
      ],
      git,
    });
    issued = github;
    git.createRepo(WIDGETS, { private: true });
    git.createRepo(PUBLIC);
    git.createRepo(HIDDEN, { private: true });
    git.createRepo(REVOKED, { private: true });
    const work = await mkdtemp(join(tmpdir(), "svc-e2e-doctor-work-"));
    dirs.push(work);
    const run = testGit(work);
    run(["init", "--quiet", "--initial-branch=main", work]);
    writeFileSync(join(work, "README.md"), "widgets\n");
    run(["add", "--all"], work);
    run(["commit", "--quiet", "-m", "first"], work);
    for (const repo of [WIDGETS, HIDDEN, REVOKED])
      run(["push", "--quiet", git.pathOf(repo), "HEAD:refs/heads/main"], work);
    // nothing listens on either: no daemon to probe, no git host for the unreachable repository
    daemonUrl = `http://127.0.0.1:${await freePort()}`;
    closedPort = await freePort();
  });

  afterAll(async () => {
    await github?.close();
    git?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const configDir = async (codehost: string, repos: string, workspaces = ""): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "svc-e2e-doctor-repos-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "daemon.yaml"),
      `targets:
  echo: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [echo]
repos:
${repos}
codehost:
  api_url: ${github.url}
${codehost}
${workspaces}`,
    );
    return dir;
  };

  const doctor = async (dir: string, env: Record<string, string>, json = true) => {
    const run = await svc(["doctor", ...(json ? ["--json"] : []), "--dir", dir], {
      ...env,
      SVC_DAEMON_URL: daemonUrl,
      HOME: dir,
    });
    const secrets = [
      GOOD_TOKEN,
      BAD_TOKEN,
      app.privateKey.split("\n")[1]!,
      ...github.exchanges.map((entry) => entry.token),
    ];
    // no token the doctor held, nor the App's key, is ever printed
    for (const secret of secrets) expect(run.stdout + run.stderr).not.toContain(secret);
    return run;
  };
  const parsed = (stdout: string) => {
    const report = JSON.parse(stdout) as Report;
    return { report, check: (name: string) => report.checks.find((entry) => entry.name === name) };
  };

  it("as the App: a readable private repository is fine, a refused one is an error naming repository, identity and fix; the cache's size is reported", async () => {
    const dir = await configDir(
      `  app:
    id: ${APP_ID}
    private_key: "\${GITHUB_APP_PRIVATE_KEY}"`,
      `  ${WIDGETS}: {}
  ${PUBLIC}: {}
  ${HIDDEN}: {}
  ${REVOKED}: {}
  off/elsewhere: { clone_url: "http://127.0.0.1:${closedPort}/off/elsewhere.git" }`,
    );
    // a mirror of a worker host: a known amount of pack data under workspaces/.repos/<host>/<owner>/<name>.git
    const mirror = join(cacheRoot(dir), "h", "acme", "widgets.git");
    mkdirSync(join(mirror, "objects", "pack"), { recursive: true });
    writeFileSync(join(mirror, "objects", "pack", "pack-1.pack"), randomBytes(1024 * 1024));
    writeFileSync(join(mirror, "HEAD"), "ref: refs/heads/main\n");

    const before = git.requests.length;
    const run = await doctor(dir, { GITHUB_APP_PRIVATE_KEY: app.privateKey });
    expect(run.code).toBe(1);
    const { report, check } = parsed(run.stdout);
    expect(report.ok).toBe(false);

    const base = github.url;
    expect(check("repositories")).toEqual({
      name: "repositories",
      status: "error",
      detail: [
        `${WIDGETS} readable as codehost.app (GitHub App ${APP_ID})`,
        `${PUBLIC} readable as anonymous (codehost.app (GitHub App ${APP_ID}) is not installed on ${PUBLIC}) (empty)`,
        `${HIDDEN} refused`,
        `${REVOKED} refused`,
        "off/elsewhere unreachable",
      ].join(", "),
    });
    const repoProblems = report.problems.filter((problem) => problem.path.startsWith("repos."));
    expect(repoProblems).toEqual([
      {
        file: "daemon.yaml",
        line: null,
        column: null,
        path: `repos.${HIDDEN}`,
        code: "repo_unreadable",
        severity: "error",
        message: `daemon.yaml: "repos.${HIDDEN}": ${base}/${HIDDEN}.git refused anonymous (codehost.app (GitHub App ${APP_ID}) is not installed on ${HIDDEN}) (HTTP 401) - install the App on ${HIDDEN} with the "Contents: read" permission`,
      },
      {
        file: "daemon.yaml",
        line: null,
        column: null,
        path: `repos.${REVOKED}`,
        code: "repo_unreadable",
        severity: "error",
        message: `daemon.yaml: "repos.${REVOKED}": ${base}/${REVOKED}.git refused codehost.app (GitHub App ${APP_ID}) (HTTP 401) - install the App on ${REVOKED} with the "Contents: read" permission`,
      },
      {
        file: "daemon.yaml",
        line: null,
        column: null,
        path: "repos.off/elsewhere",
        code: "repo_unreachable",
        severity: "warning",
        message: expect.stringMatching(
          new RegExp(
            `^daemon\\.yaml: "repos\\.off/elsewhere": http://127\\.0\\.0\\.1:${closedPort}/off/elsewhere\\.git cannot be reached \\(.*Failed to connect.*\\) - check that this host reaches it \\(DNS, proxy, firewall\\): a worker host that cannot fails every checkout of off/elsewhere$`,
          ),
        ),
      },
    ]);

    // each token was asked for one repository with contents: read only, as a checkout asks
    const exchanges = github.exchanges.filter((entry) => entry.appId === APP_ID);
    // doctor reads four repositories at once: the exchanges come in any order
    const asked = exchanges.map((entry) => [entry.repositories, entry.permissions]);
    expect(asked.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      [["revoked"], { contents: "read" }],
      [["widgets"], { contents: "read" }],
    ]);
    // the token went to git as the Basic credential of x-access-token, to its own repository only
    const gitRequests = git.requests.slice(before);
    const widgetsToken = exchanges.find((entry) => entry.repositories?.[0] === "widgets")!.token;
    const withToken = gitRequests.filter((request) => request.token === widgetsToken);
    expect(new Set(withToken.map((request) => request.repo))).toEqual(new Set([WIDGETS]));
    expect(withToken.some((request) => request.service === "git-upload-pack" && request.status === 200)).toBe(
      true,
    );
    const hidden = gitRequests.filter((request) => request.repo === HIDDEN);
    expect(hidden.length).toBeGreaterThan(0);
    expect(hidden.every((request) => request.token === undefined && request.status === 401)).toBe(true);

    const root = cacheRoot(dir);
    const bytes = diskUsage(root);
    expect(bytes).toBeGreaterThanOrEqual(1024 * 1024);
    expect(check("repo-cache")).toEqual({
      name: "repo-cache",
      status: "ok",
      detail: `${formatBytes(bytes)} of 20 GiB in 1 mirror (${root})`,
    });
    expect(report.problems.some((problem) => problem.code === "repo_cache_full")).toBe(false);
  });

  it("as an App whose key GitHub refuses: no token, so the repository is unreadable, and the message names the key's fix", async () => {
    const dir = await configDir(
      `  app:
    id: ${APP_ID}
    private_key: "\${GITHUB_APP_PRIVATE_KEY}"`,
      `  ${WIDGETS}: {}`,
    );
    const other = rsaKeyPair().privateKey;
    const run = await doctor(dir, { GITHUB_APP_PRIVATE_KEY: other });
    expect(run.stdout).not.toContain(other.split("\n")[1]);
    expect(run.code).toBe(1);
    const { report, check } = parsed(run.stdout);
    expect(check("repositories")).toMatchObject({ status: "error", detail: `${WIDGETS} refused` });
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        path: `repos.${WIDGETS}`,
        code: "repo_unreadable",
        message: `daemon.yaml: "repos.${WIDGETS}": codehost.app (GitHub App ${APP_ID}) could not get a token to read ${WIDGETS}: GitHub App ${APP_ID}: GET /repos/${WIDGETS}/installation answered 401 (A JSON web token could not be decoded) - check codehost.app.id and that the private key belongs to this App`,
      }),
    );
  });

  it("as codehost.token: a token that reads the repository passes, a token the host refuses is an error, never shown; a cache over max_size is a warning", async () => {
    const dir = await configDir(
      '  token: "${GITHUB_TOKEN}"',
      `  ${WIDGETS}: {}`,
      "workspaces:\n  repo_cache: { max_size: 100MiB }\n",
    );

    const good = await doctor(dir, { GITHUB_TOKEN: GOOD_TOKEN });
    expect(good.code).toBe(0);
    const fine = parsed(good.stdout);
    expect(fine.report.ok).toBe(true);
    expect(fine.check("repositories")).toEqual({
      name: "repositories",
      status: "ok",
      detail: `${WIDGETS} readable as codehost.token`,
    });
    expect(fine.check("repo-cache")).toEqual({
      name: "repo-cache",
      status: "ok",
      detail: `0 B of 100 MiB in 0 mirrors (${cacheRoot(dir)})`,
    });

    const refused = await doctor(dir, { GITHUB_TOKEN: BAD_TOKEN });
    expect(refused.code).toBe(1);
    const bad = parsed(refused.stdout);
    expect(bad.check("repositories")?.status).toBe("error");
    expect(bad.report.problems).toContainEqual(
      expect.objectContaining({
        path: `repos.${WIDGETS}`,
        code: "repo_unreadable",
        severity: "error",
        message: `daemon.yaml: "repos.${WIDGETS}": ${github.url}/${WIDGETS}.git refused codehost.token (HTTP 401) - give codehost.token read access to ${WIDGETS} (a fine-grained token with "Contents: read" on it, or a classic token with the repo scope)`,
      }),
    );
    // the host saw the refused token: it was sent, as a header of git's environment
    expect(git.requests.some((request) => request.token === BAD_TOKEN)).toBe(true);

    // the cache grew past max_size between fetches: a warning, not a failure
    const pack = join(cacheRoot(dir), "h", "acme", "widgets.git", "objects", "pack");
    mkdirSync(pack, { recursive: true });
    writeFileSync(join(pack, "pack-1.pack"), randomBytes(101 * 1024 * 1024));
    const human = await doctor(dir, { GITHUB_TOKEN: GOOD_TOKEN }, false);
    expect(human.code).toBe(0);
    const root = cacheRoot(dir);
    const size = formatBytes(diskUsage(root));
    expect(human.stdout).toContain(`warning  repo-cache     ${size} of 100 MiB in 1 mirror (${root})`);
    expect(human.stdout).toContain(`ok       repositories   ${WIDGETS} readable as codehost.token`);
    expect(human.stdout).toContain("[repo_cache_full]");
    expect(human.stdout).toContain(
      `daemon.yaml: the repository cache ${root} holds ${size}, more than "workspaces.repo_cache.max_size" (100 MiB) - a worker removes the least recently used mirrors no run uses after its next fetch; raise max_size if the host has the disk, or remove ${root} while no worker runs`,
    );
  });
});
