import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AppAuthError, type AppTokens, appTokens, isNotInstalled } from "../../shared/codehost/app-tokens.ts";
import { checkoutRoute, gitAuthEnv, readAccessNeeded, tokenUser } from "../../shared/codehost/git-auth.ts";
import { codehostWebBase } from "../../shared/config/daemon/repos.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import { keyOf } from "./codehost-app.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck, DoctorContext } from "./types.ts";

/** how long one `git ls-remote` may take before the repository counts as unreachable */
export const LS_REMOTE_TIMEOUT_MS = 20_000;
/** repositories asked at once */
const AT_ONCE = 4;
/** the checkout's permission (worker/checkout/credentials.ts): contents: read, nothing else */
const CHECKOUT_PERMISSIONS = { contents: "read" } as const;

/**
 * Each repository of `repos:` read as a run's checkout fetches it when its pipeline binds no
 * principal: `git ls-remote --exit-code <clone_url> HEAD` with the default code-host identity
 * (`codehost.app`'s installation token for that one repository with contents: read, or
 * `codehost.token`) for a URL under the code host's base, else anonymously; a `user:password`
 * written into `clone_url` is sent as the worker sends it. The token reaches git only as a scoped
 * header in its environment (shared/codehost/git-auth.ts); git runs with no shell, no prompt, an
 * empty HOME and neither the system's nor the user's git configuration. A refusal is the error
 * `repo_unreadable`, naming the repository, the identity and the fix; no answer is the warning
 * `repo_unreachable`. No message carries a token.
 */
export const repositoriesCheck: DoctorCheck = {
  name: "repositories",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration does not load", problems: [] };
    const { config } = loaded;
    const names = Object.keys(config.repos);
    if (names.length === 0) return { status: "skipped", detail: "no repos in daemon.yaml", problems: [] };
    let identity: DefaultIdentity | undefined;
    try {
      identity = await defaultIdentity(ctx, config);
    } catch (error) {
      // a stored secret without the database or the instance key: the instance-key, database and
      // codehost-app checks say why; without the secret no repository can be asked as runs ask it
      const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
      return {
        status: "skipped",
        detail: `the default code-host identity's secret cannot be read: ${reason}`,
        problems: [],
      };
    }
    const home = await mkdtemp(join(tmpdir(), "svc-doctor-git-"));
    try {
      const results: Result[] = new Array(names.length);
      let next = 0;
      const worker = async () => {
        while (next < names.length) {
          const index = next++;
          results[index] = await probe(names[index]!, config, identity, { home, path: ctx.env.PATH ?? "" });
        }
      };
      await Promise.all(Array.from({ length: Math.min(AT_ONCE, names.length) }, worker));
      const problems: ConfigProblem[] = [];
      const file = new ConfigFile("daemon.yaml", problems);
      for (const [index, result] of results.entries())
        if (result.problem)
          file.report(
            ["repos", names[index]!],
            result.problem.code,
            result.problem.text,
            result.problem.severity,
          );
      const status: CheckStatus = problems.some((p) => p.severity === "error")
        ? "error"
        : problems.length
          ? "warning"
          : "ok";
      return { status, detail: results.map((result) => result.detail).join(", "), problems };
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  },
};

/** The default identity with its secret resolved. */
type DefaultIdentity =
  | { name: string; token: string; app?: undefined }
  | { name: string; app: AppTokens; appId: number; token?: undefined };

async function defaultIdentity(
  ctx: DoctorContext,
  config: ConfigSnapshot,
): Promise<DefaultIdentity | undefined> {
  const codehost = config.codehost;
  if (!codehost || (!codehost.app && !codehost.token)) return undefined;
  // no secret is read when no repository would be given the identity
  const needed = Object.keys(config.repos).some((repo) => checkoutRoute(repo, config).kind === "identity");
  if (!needed) return undefined;
  if (codehost.token) return { name: "codehost.token", token: await keyOf(ctx, codehost.token) };
  const app = codehost.app!;
  const privateKey = await keyOf(ctx, app.privateKey);
  return {
    name: `codehost.app (GitHub App ${app.id})`,
    app: appTokens({ apiUrl: codehost.apiUrl, appId: app.id, privateKey }),
    appId: app.id,
  };
}

interface Result {
  detail: string;
  problem?: { code: "repo_unreadable" | "repo_unreachable"; severity: "error" | "warning"; text: string };
}

/** What git is handed for one repository, and who that is, for messages. */
interface Reader {
  url: string;
  env: Record<string, string>;
  identity: string;
  /** what to do when the host refuses it */
  fix: string;
  /** the secret in `env`, kept out of every message */
  secret?: string;
}

async function probe(
  repo: string,
  config: ConfigSnapshot,
  identity: DefaultIdentity | undefined,
  git: { home: string; path: string },
): Promise<Result> {
  const key = `"repos.${repo}"`;
  const reader = await readerOf(repo, config, identity);
  if ("detail" in reader) return reader;
  const answer = await lsRemote(reader, git);
  const scrub = (text: string) => (reader.secret ? text.split(reader.secret).join("[redacted]") : text);
  if (answer.code === 0 || answer.code === 2) {
    // 2: no HEAD, an empty repository; it was read all the same
    return { detail: `${repo} readable as ${reader.identity}${answer.code === 2 ? " (empty)" : ""}` };
  }
  const how = refusal(answer.stderr);
  if (how === NO_REPOSITORY) {
    return {
      detail: `${repo} refused`,
      problem: {
        code: "repo_unreadable",
        severity: "error",
        text: `${key}: ${reader.url} is no git repository this user can read - ${reader.fix}`,
      },
    };
  }
  if (how) {
    return {
      detail: `${repo} refused`,
      problem: {
        code: "repo_unreadable",
        severity: "error",
        text: `${key}: ${reader.url} refused ${reader.identity} (${how}) - ${reader.fix}`,
      },
    };
  }
  const reason = answer.timedOut
    ? `no answer within ${LS_REMOTE_TIMEOUT_MS / 1000} s`
    : answer.missing
      ? "git is not on the PATH"
      : scrub(lastLine(answer.stderr));
  return {
    detail: `${repo} unreachable`,
    problem: {
      code: "repo_unreachable",
      severity: "warning",
      text: `${key}: ${reader.url} cannot be reached (${reason}) - check that this host reaches it (DNS, proxy, firewall): a worker host that cannot fails every checkout of ${repo}`,
    },
  };
}

/** Who a run's checkout of `repo` fetches as when its pipeline binds no principal (as worker/checkout/credentials.ts decides). */
async function readerOf(
  repo: string,
  config: ConfigSnapshot,
  identity: DefaultIdentity | undefined,
): Promise<Reader | Result> {
  const route = checkoutRoute(repo, config);
  const cloneUrl = route.url;
  if (route.kind === "pasted") {
    const { url, env, secret } = route;
    return {
      ...{ url, env, secret },
      identity: `the credential in repos.${repo}.clone_url`,
      fix: `fix the credential in "repos.${repo}.clone_url"`,
    };
  }
  if (route.kind === "anonymous") {
    const fix = {
      not_http: `make "repos.${repo}.clone_url" name a git repository svc's user can read`,
      off_base: `runs send no identity to a URL off the code host's origin (${config.codehost ? codehostWebBase(config.codehost.apiUrl) : "no codehost"}) - make the repository readable there without credentials, or write a user:password (e.g. \${ENV} substitutions) into "repos.${repo}.clone_url"`,
      auth_none: `"repos.${repo}.auth: none" fetches without an identity - remove it to fetch as the code-host identity, or make the repository public`,
    }[route.why];
    return { url: cloneUrl, env: {}, identity: "anonymous", fix };
  }
  if (!identity) {
    return {
      url: cloneUrl,
      env: {},
      identity: "anonymous",
      fix: `configure a default code-host identity that can read ${repo} (codehost.app, or codehost.token)`,
    };
  }
  if (identity.token !== undefined) {
    return {
      url: cloneUrl,
      env: gitAuthEnv(route.base, tokenUser(config), identity.token),
      identity: identity.name,
      fix: `give codehost.token ${readAccessNeeded(config, repo)}`,
      secret: identity.token,
    };
  }
  const install = `install the App on ${repo} with the "Contents: read" permission`;
  try {
    const { token } = await identity.app.tokenFor(repo, {
      restrict: true,
      permissions: CHECKOUT_PERMISSIONS,
    });
    return {
      url: cloneUrl,
      env: gitAuthEnv(route.base, "x-access-token", token),
      identity: identity.name,
      fix: install,
      secret: token,
    };
  } catch (error) {
    if (!(error instanceof AppAuthError)) throw error;
    // not installed on the repository: runs fetch anonymously, which a public repository allows
    if (isNotInstalled(error)) {
      return {
        url: cloneUrl,
        env: {},
        identity: `anonymous (${identity.name} is not installed on ${repo})`,
        fix: install,
      };
    }
    // a 401 is the App's key refused: its message names that fix (the codehost-app check reports it too)
    const answered = error.status !== undefined && error.status < 500;
    return {
      detail: `${repo} ${answered ? "refused" : "unreachable"}`,
      problem: answered
        ? {
            code: "repo_unreadable",
            severity: "error",
            text: `"repos.${repo}": ${identity.name} could not get a token to read ${repo}: ${error.message}${error.status === 401 ? "" : ` - ${install}`}`,
          }
        : {
            code: "repo_unreachable",
            severity: "warning",
            text: `"repos.${repo}": ${identity.name} could not get a token to read ${repo}: ${error.message} - check that this host reaches ${config.codehost!.apiUrl}`,
          },
    };
  }
}

interface Answer {
  code: number | null;
  stderr: string;
  timedOut: boolean;
  missing: boolean;
}

/** `git ls-remote --exit-code <url> HEAD`: argv only, no shell, no prompt, no configuration but the header. */
function lsRemote(reader: Reader, git: { home: string; path: string }): Promise<Answer> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["ls-remote", "--exit-code", reader.url, "HEAD"],
      {
        env: {
          PATH: git.path,
          // an empty HOME: no ~/.netrc or credential file of whoever runs doctor answers for the identity
          HOME: git.home,
          GIT_TERMINAL_PROMPT: "0",
          GIT_CONFIG_NOSYSTEM: "1",
          GIT_CONFIG_GLOBAL: "/dev/null",
          GIT_SSH_COMMAND: "ssh -o BatchMode=yes",
          ...reader.env,
        },
        timeout: LS_REMOTE_TIMEOUT_MS,
        killSignal: "SIGKILL",
        maxBuffer: 1024 * 1024,
        windowsHide: true,
      },
      (error, _stdout, stderr) => {
        if (!error) return resolve({ code: 0, stderr: String(stderr), timedOut: false, missing: false });
        const failure = error as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        resolve({
          code: typeof failure.code === "number" ? failure.code : null,
          stderr: String(stderr),
          timedOut: failure.killed === true,
          missing: failure.code === "ENOENT",
        });
      },
    );
  });
}

/** a local path (or file:// URL) that holds no repository git can read */
const NO_REPOSITORY = "no git repository there";

/** How the host refused, for the message; undefined when git's stderr is no refusal (as worker/checkout/mirror.ts reads it). */
function refusal(stderr: string): string | undefined {
  const status = /returned error: (40[134])/.exec(stderr)?.[1];
  if (status) return `HTTP ${status}`;
  if (/Repository not found|repository '.*' not found/i.test(stderr)) return "HTTP 404, repository not found";
  if (
    /Authentication failed|could not read Username|could not read Password|terminal prompts disabled/i.test(
      stderr,
    )
  )
    return "HTTP 401";
  if (/does not appear to be a git repository|not a git repository/i.test(stderr)) return NO_REPOSITORY;
  return undefined;
}

function lastLine(text: string): string {
  const lines = text.trim().split("\n").filter(Boolean);
  return (lines.at(-1) ?? "no message").replace(/^fatal: /, "").slice(0, 300);
}
