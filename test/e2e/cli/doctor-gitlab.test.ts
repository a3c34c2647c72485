// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/free-port.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { type FakeGitLab, startFakeGitLab } from "../gitlab/fake-gitlab.ts";
import { svc } from "./support.ts";

const WIDGETS = "acme/widgets";
/** private, and none of the tokens' users is a member */
const HIDDEN = "acme/hidden";

/** a bot user's token with the api scope, a developer of acme/widgets */
const GOOD = "glpat-doctorGood000000000001";
/** a token GitLab does not know (revoked, or never issued) */
const REVOKED = "glpat-doctorRevoked0000000002";
/** read_api only: it reads, it cannot post */
const READ_ONLY = "glpat-doctorReadApi000000003";
/** the api scope, but a reporter of acme/widgets */
const REPORTER = "glpat-doctorReporter00000004";
/** the api scope and a developer, but it expires in five days */
const EXPIRING = "glpat-doctorExpiring00000005";
/** a person's token: not a bot user */
const PERSON = "glpat-doctorPerson0000000006";
const TOKENS = [GOOD, REVOKED, READ_ONLY, REPORTER, EXPIRING, PERSON];

const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
const EXPIRES = inDays(5);

interface Report {
  ok: boolean;
  checks: { name: string; status: string; detail: string }[];
  problems: { file: string; path: string; code: string; severity: string; message: string }[];
}

/**
 * `svc doctor` with `codehost.kind: gitlab` (issue 53): the real CLI asks a loopback GitLab REST v4
 * (test/e2e/gitlab/fake-gitlab.ts) who the token is, its scopes and expiry, and each project of
 * `repos:` as that token's user sees it. The repositories check beside it reads the projects' git
 * (public, `auth: none`) from a git host on the same origin, so only the GitLab check's answers vary.
 */
describe("svc doctor: the GitLab token and its projects", () => {
  let gitlab: FakeGitLab;
  let git: GitHost;
  let daemonUrl: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    git = gitHost();
    git.createRepo(WIDGETS);
    git.createRepo(HIDDEN);
    gitlab = await startFakeGitLab({
      tokens: {
        [GOOD]: { id: 1, username: "svc-bot", bot: true, scopes: ["api"] },
        [READ_ONLY]: { id: 2, username: "reader-bot", bot: true, scopes: ["read_api"] },
        [REPORTER]: { id: 3, username: "reporter-bot", bot: true, scopes: ["api"] },
        [EXPIRING]: { id: 4, username: "soon-bot", bot: true, scopes: ["api"], expires_at: EXPIRES },
        [PERSON]: { id: 5, username: "alice", scopes: ["api", "read_user"] },
      },
      projects: [
        {
          id: 11,
          path_with_namespace: WIDGETS,
          members: { 1: 30, 2: 30, 3: 20, 4: 40, 5: 50 },
          mergeRequests: [],
        },
        { id: 12, path_with_namespace: HIDDEN, members: { 99: 50 }, mergeRequests: [] },
      ],
      git,
    });
    // nothing listens there: no daemon to probe
    daemonUrl = `http://127.0.0.1:${await freePort()}`;
  });

  afterAll(async () => {
    await gitlab?.close();
    git?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const configDir = async (repos: string[], codehost = '  token: "${GITLAB_TOKEN}"'): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "svc-e2e-doctor-gitlab-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "daemon.yaml"),
      `targets:
  echo: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [echo]
repos:
${repos.map((repo) => `  ${repo}: { auth: none }`).join("\n")}
codehost:
  kind: gitlab
  api_url: ${gitlab.apiUrl}
${codehost}
`,
    );
    return dir;
  };

  const doctor = async (dir: string, env: Record<string, string>, json = true) => {
    const run = await svc(["doctor", ...(json ? ["--json"] : []), "--dir", dir], {
      ...env,
      SVC_DAEMON_URL: daemonUrl,
      HOME: dir,
    });
    // no token, good or bad, is ever printed
    for (const token of TOKENS) expect(run.stdout + run.stderr).not.toContain(token);
    return run;
  };
  const parsed = (stdout: string) => {
    const report = JSON.parse(stdout) as Report;
    return {
      report,
      check: (name: string) => report.checks.find((entry) => entry.name === name),
      gitlabProblems: report.problems.filter((problem) => problem.code.startsWith("gitlab_")),
    };
  };

  it("a bot user's token with the api scope, a developer of the project, passes; it is asked with gitbeaker's routes", async () => {
    const dir = await configDir([WIDGETS]);
    const before = gitlab.requests.length;
    const run = await doctor(dir, { GITLAB_TOKEN: GOOD });
    const { report, check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "ok",
      detail: `codehost.token: svc-bot (bot user), scopes api; ${WIDGETS} developer (30)`,
    });
    expect(gitlabProblems).toEqual([]);
    expect(check("repositories")?.status).toBe("ok");
    expect(run.code).toBe(0);
    expect(report.ok).toBe(true);
    const asked = gitlab.requests
      .slice(before)
      .map((request) => [request.method, request.path, request.token]);
    expect(asked).toEqual([
      ["GET", "/api/v4/user", GOOD],
      ["GET", "/api/v4/personal_access_tokens/self", GOOD],
      ["GET", "/api/v4/projects/acme%2Fwidgets", GOOD],
    ]);

    // the human output: the check's line, and nothing else about GitLab
    const human = await doctor(dir, { GITLAB_TOKEN: GOOD }, false);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(
      `ok       gitlab         codehost.token: svc-bot (bot user), scopes api; ${WIDGETS} developer (30)`,
    );
    expect(human.stdout).not.toContain("[gitlab_");
  });

  it("a token GitLab does not know is gitlab_token_invalid, naming codehost.token and the fix, and no project is asked", async () => {
    const dir = await configDir([WIDGETS]);
    const before = gitlab.requests.length;
    const run = await doctor(dir, { GITLAB_TOKEN: REVOKED });
    expect(run.code).toBe(1);
    const { report, check, gitlabProblems } = parsed(run.stdout);
    expect(report.ok).toBe(false);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "error",
      detail: "codehost.token: refused (401)",
    });
    expect(gitlabProblems).toEqual([
      expect.objectContaining({
        file: "daemon.yaml",
        path: "codehost.token",
        code: "gitlab_token_invalid",
        severity: "error",
        message: `daemon.yaml: "codehost.token": GitLab at ${gitlab.apiUrl} refused the token (401: 401 Unauthorized) - it is unknown there, revoked or expired: create a project or group access token (role Developer, scope api) in GitLab, or a personal access token of a bot user with the api scope, and put it in the environment variable "codehost.token" names (or daemon.yaml, where it is written out), then restart the daemon`,
      }),
    ]);
    expect(gitlab.requests.slice(before).map((request) => request.path)).toEqual(["/api/v4/user"]);

    const human = await doctor(dir, { GITLAB_TOKEN: REVOKED }, false);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain("[gitlab_token_invalid]");
  });

  it("a read_api token is a scope warning: read_api cannot post", async () => {
    const dir = await configDir([WIDGETS]);
    const run = await doctor(dir, { GITLAB_TOKEN: READ_ONLY });
    const { check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "warning",
      detail: `codehost.token: reader-bot (bot user), scopes read_api; ${WIDGETS} developer (30)`,
    });
    expect(gitlabProblems).toEqual([
      expect.objectContaining({
        path: "codehost.token",
        code: "gitlab_token_scope",
        severity: "warning",
        message: expect.stringContaining(
          `"codehost.token": the token's scopes are read_api (read_api only reads: it cannot post) - svc posts notes and discussions on merge requests, which needs the api scope:`,
        ),
      }),
    ]);
  });

  it("a project the token's user cannot see is gitlab_project_unreachable, naming repos.<path>", async () => {
    const dir = await configDir([WIDGETS, HIDDEN]);
    const run = await doctor(dir, { GITLAB_TOKEN: GOOD });
    expect(run.code).toBe(1);
    const { check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "error",
      detail: `codehost.token: svc-bot (bot user), scopes api; ${WIDGETS} developer (30), ${HIDDEN} not found`,
    });
    expect(gitlabProblems).toEqual([
      expect.objectContaining({
        path: `repos.${HIDDEN}`,
        code: "gitlab_project_unreachable",
        severity: "error",
        message: `daemon.yaml: "repos.${HIDDEN}": svc-bot (codehost.token) cannot see the GitLab project ${HIDDEN} (404: 404 Project Not Found) - check that the key is the project's full path (group/subgroup/project), and add svc-bot to the project as a Developer (Manage → Members; a project access token reaches its own project only, a group access token the group's projects)`,
      }),
    ]);
  });

  it("a reporter is gitlab_access_too_low: it reads but cannot post", async () => {
    const dir = await configDir([WIDGETS]);
    const run = await doctor(dir, { GITLAB_TOKEN: REPORTER });
    expect(run.code).toBe(1);
    const { check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "error",
      detail: `codehost.token: reporter-bot (bot user), scopes api; ${WIDGETS} reporter (20)`,
    });
    expect(gitlabProblems).toEqual([
      expect.objectContaining({
        path: `repos.${WIDGETS}`,
        code: "gitlab_access_too_low",
        severity: "error",
        message: `daemon.yaml: "repos.${WIDGETS}": reporter-bot (codehost.token) is reporter (20) of ${WIDGETS}: it can read the repository but not post notes and discussions, which needs Developer (30) - give reporter-bot the Developer role on ${WIDGETS} or its group (Manage → Members)`,
      }),
    ]);
  });

  it("a token that expires within 14 days is a warning; a person's account is named as one", async () => {
    const dir = await configDir([WIDGETS]);
    const run = await doctor(dir, { GITLAB_TOKEN: EXPIRING });
    const { check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "warning",
      detail: `codehost.token: soon-bot (bot user), scopes api, expires ${EXPIRES}; ${WIDGETS} maintainer (40)`,
    });
    expect(gitlabProblems).toEqual([
      expect.objectContaining({
        path: "codehost.token",
        code: "gitlab_token_expiring",
        severity: "warning",
        message: expect.stringMatching(
          new RegExp(
            `^daemon\\.yaml: "codehost\\.token": the token expires on ${EXPIRES} \\(in [45] days\\)`,
          ),
        ),
      }),
    ]);

    const person = await doctor(dir, { GITLAB_TOKEN: PERSON });
    expect(parsed(person.stdout).check("gitlab")).toEqual({
      name: "gitlab",
      status: "ok",
      detail: `codehost.token: alice (a person's account: svc posts as them), scopes api read_user; ${WIDGETS} owner (50)`,
    });
  });

  it("a principal's token is asked who it is and its scopes; a GitHub code host skips the check", async () => {
    const dir = await configDir(
      [WIDGETS],
      `  token: "\${GITLAB_TOKEN}"
  principals:
    reviewer:
      token: "\${REVIEWER_TOKEN}"`,
    );
    const run = await doctor(dir, { GITLAB_TOKEN: GOOD, REVIEWER_TOKEN: REVOKED });
    expect(run.code).toBe(1);
    const { check, gitlabProblems } = parsed(run.stdout);
    expect(check("gitlab")).toEqual({
      name: "gitlab",
      status: "error",
      detail: `codehost.token: svc-bot (bot user), scopes api; ${WIDGETS} developer (30); codehost.principals.reviewer.token: refused (401)`,
    });
    expect(gitlabProblems.map((problem) => [problem.path, problem.code])).toEqual([
      ["codehost.principals.reviewer.token", "gitlab_token_invalid"],
    ]);

    // a stored token doctor cannot read (no SVC_DATABASE_URL): nothing asked, the check says why
    const stored = await configDir([WIDGETS], "  token_ref: codehost/default");
    const unread = await doctor(stored, {});
    expect(parsed(unread.stdout).check("gitlab")).toEqual({
      name: "gitlab",
      status: "skipped",
      detail:
        "codehost.token: cannot be read (the stored key codehost/default cannot be read: SVC_DATABASE_URL is not set)",
    });

    const github = await mkdtemp(join(tmpdir(), "svc-e2e-doctor-gitlab-"));
    dirs.push(github);
    writeFileSync(
      join(github, "daemon.yaml"),
      `targets:
  echo: { runtime: command, command: ["cat"], timeout: 1m }
ask:
  targets: [echo]
`,
    );
    const skipped = await doctor(github, {});
    expect(parsed(skipped.stdout).check("gitlab")).toEqual({
      name: "gitlab",
      status: "skipped",
      detail: "codehost.kind is not gitlab",
    });
  });
});
