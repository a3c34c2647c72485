import { AppAuthError } from "../../shared/codehost/app-tokens.ts";
import {
  DEVELOPER_ACCESS,
  GitlabApiError,
  type GitlabClient,
  gitlabClient,
  gitlabHost,
} from "../../shared/codehost/gitlab.ts";
import type { DoctorCode } from "../../shared/config/codes.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import { ConfigFile, formatPath, type KeyPath } from "../../shared/config/source.ts";
import type { CodehostConfig, ConfigProblem, Severity } from "../../shared/config/types.ts";
import { keyOf } from "./codehost-app.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck, DoctorContext } from "./types.ts";

/** GitLab's reporter level: reads the repository (a checkout) and the merge requests. */
export const REPORTER_ACCESS = 20;
/** a token that expires within this many days is a warning */
export const EXPIRY_WARNING_DAYS = 14;
/** projects asked at once */
const AT_ONCE = 4;
const DAY_MS = 86_400_000;

/** GitLab's names of its access levels (Planner is GitLab 17.7's). */
const ROLES: Record<number, string> = {
  5: "minimal access",
  10: "guest",
  15: "planner",
  20: "reporter",
  30: "developer",
  40: "maintainer",
  50: "owner",
};

/**
 * `codehost.kind: gitlab`: each GitLab token of daemon.yaml (`codehost.token`,
 * `codehost.principals.<id>.token`) is asked who it is (`GET /user`: the username, a bot user or a
 * person) and what it may do (`GET /personal_access_tokens/self`: its scopes and expiry; a token
 * type GitLab answers that route for with 403 or 404 is no problem, its scopes are just not
 * shown), and the default token (`codehost.token`) is asked for each project of `repos:`
 * (`GET /projects/:path`): a 404 is a project its user cannot see, and its access level there must
 * be developer (30) to post notes and discussions, reporter (20) to read the repository. All
 * through gitbeaker (shared/codehost/gitlab.ts). Each problem names the key and the fix; no message
 * carries a token.
 */
export const codehostGitlabCheck: DoctorCheck = {
  name: "gitlab",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const { config } = loaded;
    const codehost = config.codehost;
    if (codehost?.kind !== "gitlab")
      return { status: "skipped", detail: "codehost.kind is not gitlab", problems: [] };
    const tokens: [string[], SecretSource][] = [
      ...(codehost.token ? [[["codehost", "token"], codehost.token] as [string[], SecretSource]] : []),
      ...Object.entries(codehost.principals).flatMap(([id, principal]) =>
        principal.token
          ? [[["codehost", "principals", id, "token"], principal.token] as [string[], SecretSource]]
          : [],
      ),
    ];
    if (tokens.length === 0)
      return { status: "skipped", detail: "no GitLab token in daemon.yaml (codehost.token)", problems: [] };
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const details: string[] = [];
    let asked = 0;
    for (const [path, source] of tokens) {
      const key = formatPath(path);
      const token = await readToken(ctx, source);
      if (typeof token !== "string") {
        // a stored token without the database or the instance key: those checks say why
        details.push(`${key}: cannot be read (${token.reason})`);
        continue;
      }
      asked += 1;
      const findings: Finding[] = [];
      const scrub = (text: string) => text.split(token).join("[redacted]");
      const detail = await checkToken(
        { key, path, source, client: gitlabClient({ apiUrl: codehost.apiUrl, token }), codehost },
        path.length === 2 ? Object.keys(config.repos) : [],
        findings,
      );
      details.push(scrub(detail));
      for (const finding of findings) {
        // one code host: its URL's finding once, whichever token met it first
        if (finding.code === "gitlab_unreachable" && problems.some((p) => p.code === finding.code)) continue;
        file.report(finding.path, finding.code, scrub(finding.text), finding.severity);
      }
    }
    if (asked === 0) return { status: "skipped", detail: details.join("; "), problems };
    const status: CheckStatus = problems.some((problem) => problem.severity === "error")
      ? "error"
      : problems.length
        ? "warning"
        : "ok";
    return { status, detail: details.join("; "), problems };
  },
};

interface Finding {
  path: KeyPath;
  code: Extract<
    DoctorCode,
    | "gitlab_token_invalid"
    | "gitlab_token_scope"
    | "gitlab_token_expiring"
    | "gitlab_unreachable"
    | "gitlab_project_unreachable"
    | "gitlab_access_too_low"
  >;
  severity: Severity;
  text: string;
}

interface Token {
  /** the key it is configured under, `codehost.token` or `codehost.principals.<id>.token` */
  key: string;
  path: KeyPath;
  source: SecretSource;
  client: GitlabClient;
  codehost: CodehostConfig;
}

async function readToken(ctx: DoctorContext, source: SecretSource): Promise<string | { reason: string }> {
  try {
    return await keyOf(ctx, source);
  } catch (error) {
    if (error instanceof AppAuthError) return { reason: error.message };
    const reason = error instanceof Error ? error.message.split("\n")[0]! : String(error);
    return { reason };
  }
}

/** Where the token is replaced: its variable, or the stored secret its `token_ref` names. */
function whereItLives(key: string, source: SecretSource): string {
  if (source.kind === "stored")
    return `the stored secret ${source.name} (${key.replace(/token$/, "token_ref")})`;
  return `the environment variable "${key}" names (or daemon.yaml, where it is written out)`;
}

const NEW_TOKEN =
  "create a project or group access token (role Developer, scope api) in GitLab, or a personal access token of a bot user with the api scope";

/** Who the token is, its scopes and expiry, then each project: one line of detail, findings beside it. */
async function checkToken(token: Token, projects: string[], findings: Finding[]): Promise<string> {
  const { key, path, source, client, codehost } = token;
  const quoted = `"${key}"`;
  const where = whereItLives(key, source);
  const replace = `${NEW_TOKEN}, and put it in ${where}, then restart the daemon`;
  const rotate = `rotate it in GitLab (or create a new one) and put the new token in ${where}, then restart the daemon`;
  let user: { username: string; bot: boolean };
  try {
    const self = await client.Users.showCurrentUser();
    user = { username: String(self.username), bot: self.bot === true };
  } catch (error) {
    if (!(error instanceof GitlabApiError)) throw error;
    if (error.status === 401) {
      findings.push({
        path,
        code: "gitlab_token_invalid",
        severity: "error",
        text: `${quoted}: GitLab at ${codehost.apiUrl} refused the token (401: ${error.hostMessage}) - it is unknown there, revoked or expired: ${replace}`,
      });
      return `${key}: refused (401)`;
    }
    if (error.status === 403) {
      findings.push({
        path,
        code: "gitlab_token_scope",
        severity: "error",
        text: `${quoted}: the token may not read its own user (403: ${error.hostMessage}) - it has none of the api, read_api and read_user scopes, and svc posts notes and discussions, which needs the api scope: ${replace}`,
      });
      return `${key}: refused (403, scopes)`;
    }
    unreachable(codehost, error, findings);
    return `${key}: GitLab did not answer (${error.status || "no answer"})`;
  }
  const who = `${user.username} (${user.bot ? "bot user" : "a person's account: svc posts as them"})`;
  const about = [who, await scopes(token, findings, { replace, rotate })];
  if (projects.length === 0) return `${key}: ${about.join(", ")}`;
  const results: string[] = new Array(projects.length);
  let next = 0;
  const worker = async () => {
    while (next < projects.length) {
      const index = next++;
      results[index] = await project(token, user.username, projects[index]!, findings);
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, projects.length) }, worker));
  // the findings of projects asked at once arrive in any order: report them in `repos:` order
  findings.sort((a, b) => order(a, projects) - order(b, projects));
  return `${key}: ${about.join(", ")}; ${results.join(", ")}`;
}

function order(finding: Finding, projects: string[]): number {
  return finding.path[0] === "repos" ? projects.indexOf(String(finding.path[1])) : -1;
}

/** The token's scopes and expiry, for the detail; a missing `api` scope or a near expiry is a finding. */
async function scopes(
  token: Token,
  findings: Finding[],
  fix: { replace: string; rotate: string },
): Promise<string> {
  const { key, path, client } = token;
  const quoted = `"${key}"`;
  let self: { scopes?: unknown; expires_at?: unknown };
  try {
    self = await client.PersonalAccessTokens.show();
  } catch (error) {
    if (!(error instanceof GitlabApiError)) throw error;
    // a token type without the route (an older GitLab, a CI job token): not a problem
    return `scopes could not be read (GitLab answered ${error.status || "nothing"})`;
  }
  const list = Array.isArray(self.scopes) ? self.scopes.map(String) : [];
  const parts = [`scopes ${list.join(" ") || "none"}`];
  if (!list.includes("api")) {
    const readOnly = list.includes("read_api") ? " (read_api only reads: it cannot post)" : "";
    findings.push({
      path,
      code: "gitlab_token_scope",
      severity: "warning",
      text: `${quoted}: the token's scopes are ${list.join(", ") || "none"}${readOnly} - svc posts notes and discussions on merge requests, which needs the api scope: ${fix.replace}`,
    });
  }
  const expires = typeof self.expires_at === "string" ? self.expires_at : undefined;
  const at = expires ? Date.parse(expires.length === 10 ? `${expires}T00:00:00Z` : expires) : Number.NaN;
  if (expires && Number.isFinite(at)) {
    const days = Math.floor((at - Date.now()) / DAY_MS);
    const date = expires.slice(0, 10);
    parts.push(`expires ${date}`);
    if (days < EXPIRY_WARNING_DAYS)
      findings.push({
        path,
        code: "gitlab_token_expiring",
        severity: "warning",
        text: `${quoted}: the token expires on ${date} (${days <= 0 ? "today" : `in ${days} day${days === 1 ? "" : "s"}`}) - GitLab refuses it from then on: ${fix.rotate}`,
      });
  }
  return parts.join(", ");
}

/** No answer, a 5xx, or an answer that is not GitLab's API: the one finding about `codehost.api_url`. */
function unreachable(codehost: CodehostConfig, error: GitlabApiError, findings: Finding[]): void {
  if (findings.some((finding) => finding.code === "gitlab_unreachable")) return;
  const notApi = error.status === 404;
  findings.push({
    path: ["codehost", "api_url"],
    code: "gitlab_unreachable",
    severity: notApi ? "error" : "warning",
    text: notApi
      ? `"codehost.api_url": ${codehost.apiUrl} is not GitLab's REST API (GET /user answered 404: ${error.hostMessage}) - set it to the API v4 root, e.g. ${gitlabHost(codehost.apiUrl)}/api/v4`
      : `"codehost.api_url": GitLab at ${codehost.apiUrl} did not answer (${error.status ? `${error.status}: ` : ""}${error.hostMessage}) - check the URL and that this host reaches it (DNS, proxy, firewall): the daemon posts from here`,
  });
}

/** One project of `repos:` as the token's user sees it. */
async function project(token: Token, username: string, repo: string, findings: Finding[]): Promise<string> {
  const { key, client, codehost } = token;
  const quoted = `"repos.${repo}"`;
  let answer: { permissions?: unknown };
  try {
    answer = (await client.Projects.show(repo)) as { permissions?: unknown };
  } catch (error) {
    if (!(error instanceof GitlabApiError)) throw error;
    if (error.status === 404 || error.status === 403 || error.status === 401) {
      findings.push({
        path: ["repos", repo],
        code: "gitlab_project_unreachable",
        severity: "error",
        text:
          error.status === 404
            ? `${quoted}: ${username} (${key}) cannot see the GitLab project ${repo} (404: ${error.hostMessage}) - check that the key is the project's full path (group/subgroup/project), and add ${username} to the project as a Developer (Manage → Members; a project access token reaches its own project only, a group access token the group's projects)`
            : `${quoted}: GitLab refused ${key} the project ${repo} (${error.status}: ${error.hostMessage}) - give the token the api scope and ${username} the Developer role on ${repo}`,
      });
      return `${repo} ${error.status === 404 ? "not found" : "refused"}`;
    }
    unreachable(codehost, error, findings);
    return `${repo} unreachable`;
  }
  const level = accessOf(answer.permissions);
  const role = ROLES[level] ?? (level ? `access level ${level}` : "no member");
  if (level >= DEVELOPER_ACCESS) return `${repo} ${role} (${level})`;
  const can =
    level >= REPORTER_ACCESS
      ? "it can read the repository but not post notes and discussions, which needs Developer (30)"
      : "it can neither read the repository, which needs Reporter (20), nor post notes and discussions, which needs Developer (30)";
  findings.push({
    path: ["repos", repo],
    code: "gitlab_access_too_low",
    severity: "error",
    text: `${quoted}: ${username} (${key}) is ${level ? `${role} (${level})` : "no member"} of ${repo}: ${can} - give ${username} the Developer role on ${repo} or its group (Manage → Members)`,
  });
  return `${repo} ${role} (${level})`;
}

/** The higher of the project's and its group's access level for the token's user; 0 for none. */
function accessOf(permissions: unknown): number {
  const levels = ["project_access", "group_access"].map((kind) => {
    const access = (permissions as Record<string, { access_level?: unknown } | null> | undefined)?.[kind];
    return typeof access?.access_level === "number" ? access.access_level : 0;
  });
  return Math.max(...levels);
}
