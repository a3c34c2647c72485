import { Octokit } from "@octokit/core";
import { paginateRest } from "@octokit/plugin-paginate-rest";
import { retry } from "@octokit/plugin-retry";
import { AppAuthError, appTokens } from "../../shared/codehost/app-tokens.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { octokitLog } from "../../shared/octokit-log.ts";
import { ApiError } from "../api/errors.ts";

/**
 * The ingress's reads of the code host (GitHub REST through Octokit) with the default identity,
 * `codehost.token` or the installation token of `codehost.app` for the repository read:
 * repositories and their open pull requests. A refusal of the code host becomes
 * an ApiError that names the identity and the fix; a rate limit is answered at once (503 with
 * Retry-After), never waited out while the caller's request hangs. The token never reaches an answer.
 */
const ReadingOctokit = Octokit.plugin(paginateRest, retry);
type ReadingClient = InstanceType<typeof ReadingOctokit>;

const identityOf = (config: Readonly<ConfigSnapshot>) =>
  config.codehost?.app ? "codehost.app (the default identity)" : "codehost.token (the default identity)";
const BRANCH_TTL_MS = 60_000;
const MAX_PULLS = 1000;

export interface OpenPull {
  number: number;
  title: string;
  author: string | null;
  draft: boolean;
  url: string;
  head: { ref: string; sha: string };
  base: string;
  createdAt: string;
  updatedAt: string;
}

export interface CodehostReads {
  defaultBranch(repo: string): Promise<string>;
  openPulls(repo: string): Promise<OpenPull[]>;
  /** one pull request as GitHub's REST API answers it (the shape of a webhook's `pull_request`) */
  pull(repo: string, number: number): Promise<GithubPull>;
  /** a pull request's review comments, every page (a backtest's human comments) */
  reviewComments(repo: string, number: number): Promise<unknown[]>;
  /** the files changed from `base` to `head`, with their patches (a backtest's later fixes) */
  compare(repo: string, base: string, head: string): Promise<unknown[]>;
}

/** The parts of GitHub's pull request object a rehearsal builds its event from. */
export interface GithubPull {
  number: number;
  state: string;
  user: { login: string } | null;
  head: { sha: string; ref: string; repo: unknown };
  base: { sha: string; ref: string; repo: unknown };
  [field: string]: unknown;
}

/** One per daemon process: the default-branch cache lives as long as the configuration. */
export function codehostReads(deps: {
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  resolveSecret: (source: SecretSource) => string;
}): CodehostReads {
  const branches = new Map<string, { branch: string; until: number }>();
  // one client per token: the long-lived one, or each installation token while it lives
  const clients = new Map<string, { octokit: ReadingClient; token: string }>();
  const connect = async (repo: string) => {
    const token = await identityToken(deps, repo);
    let client = clients.get(token);
    if (!client) {
      client = open(deps, token);
      clients.clear(); // an App's earlier tokens are renewed away; keep no stale client
      clients.set(token, client);
    }
    return client;
  };
  return {
    async defaultBranch(repo) {
      const cached = branches.get(repo);
      if (cached && cached.until > Date.now()) return cached.branch;
      const { octokit, token } = await connect(repo);
      const [owner, name] = repo.split("/");
      const { data } = await octokit
        .request("GET /repos/{owner}/{repo}", { owner: owner!, repo: name! })
        .catch((error: unknown) => {
          throw refusal(error, repo, token, identityOf(deps.config));
        });
      branches.set(repo, { branch: data.default_branch, until: Date.now() + BRANCH_TTL_MS });
      return data.default_branch;
    },
    async openPulls(repo) {
      const { octokit, token } = await connect(repo);
      const [owner, name] = repo.split("/");
      const pulls: OpenPull[] = [];
      try {
        for await (const page of octokit.paginate.iterator("GET /repos/{owner}/{repo}/pulls", {
          owner: owner!,
          repo: name!,
          state: "open",
          per_page: 100,
        })) {
          for (const pull of page.data) pulls.push(shapePull(pull));
          if (pulls.length >= MAX_PULLS) break;
        }
      } catch (error) {
        throw refusal(error, repo, token, identityOf(deps.config));
      }
      return pulls;
    },
    async pull(repo, number) {
      const { octokit, token } = await connect(repo);
      const [owner, name] = repo.split("/");
      const { data } = await octokit
        .request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
          owner: owner!,
          repo: name!,
          pull_number: number,
        })
        .catch((error: unknown) => {
          throw refusal(error, repo, token, identityOf(deps.config));
        });
      return data as unknown as GithubPull;
    },
    async reviewComments(repo, number) {
      const { octokit, token } = await connect(repo);
      const [owner, name] = repo.split("/");
      return (await octokit
        .paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", {
          owner: owner!,
          repo: name!,
          pull_number: number,
          per_page: 100,
        })
        .catch((error: unknown) => {
          throw refusal(error, repo, token, identityOf(deps.config));
        })) as unknown[];
    },
    async compare(repo, base, head) {
      const { octokit, token } = await connect(repo);
      const [owner, name] = repo.split("/");
      const { data } = await octokit
        .request("GET /repos/{owner}/{repo}/compare/{basehead}", {
          owner: owner!,
          repo: name!,
          basehead: `${base}...${head}`,
        })
        .catch((error: unknown) => {
          throw refusal(error, repo, token, identityOf(deps.config));
        });
      return (data.files ?? []) as unknown[];
    },
  };
}

async function identityToken(deps: Parameters<typeof codehostReads>[0], repo: string): Promise<string> {
  const codehost = deps.config.codehost;
  if (codehost?.app) {
    const privateKey = deps.resolveSecret(codehost.app.privateKey);
    try {
      const tokens = appTokens({ apiUrl: codehost.apiUrl, appId: codehost.app.id, privateKey });
      return (await tokens.tokenFor(repo)).token;
    } catch (error) {
      if (!(error instanceof AppAuthError)) throw error;
      if (error.status === 404) throw new ApiError(404, "codehost_not_found", error.message);
      throw new ApiError(502, "codehost_unauthorized", error.message);
    }
  }
  if (!codehost?.token)
    throw new ApiError(
      503,
      "codehost_not_configured",
      `daemon.yaml sets no ${codehost ? "codehost.token or codehost.app" : "codehost block"}; add codehost.api_url and codehost.app (a GitHub App) or codehost.token (the default identity) and restart the daemon to read repositories`,
    );
  return deps.resolveSecret(codehost.token);
}

function open(
  deps: Parameters<typeof codehostReads>[0],
  token: string,
): { octokit: ReadingClient; token: string } {
  const codehost = deps.config.codehost!;
  const octokit = new ReadingOctokit({
    auth: token,
    baseUrl: codehost.apiUrl.replace(/\/+$/, ""),
    userAgent: "svc-repos",
    // two retries of a 5xx (about 5 s of back-off) stay inside the CLI's 15 s request time-out
    retry: { retries: 2, doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451] },
    log: octokitLog(deps.logger, "repos"),
  });
  return { octokit, token };
}

function shapePull(pull: {
  number: number;
  title: string;
  user: { login: string } | null;
  draft?: boolean;
  html_url: string;
  head: { ref: string; sha: string };
  base: { ref: string };
  created_at: string;
  updated_at: string;
}): OpenPull {
  return {
    number: pull.number,
    title: pull.title,
    author: pull.user?.login ?? null,
    draft: pull.draft ?? false,
    url: pull.html_url,
    head: { ref: pull.head.ref, sha: pull.head.sha },
    base: pull.base.ref,
    createdAt: pull.created_at,
    updatedAt: pull.updated_at,
  };
}

/** A code-host refusal as an answer naming the identity and the fix; the token is cut from any text. */
export function refusal(error: unknown, repo: string, token: string, identity: string): ApiError {
  const e = error as {
    status?: number;
    message?: string;
    response?: { headers?: Record<string, string | undefined>; data?: { message?: string } };
  };
  const status = e.status ?? 0;
  const said = (e.response?.data?.message ?? e.message ?? String(error)).split(token).join("[redacted]");
  const headers = e.response?.headers ?? {};
  const rateLimited =
    status === 429 ||
    (status === 403 && (headers["x-ratelimit-remaining"] === "0" || /rate limit/i.test(said)));
  if (rateLimited) {
    const reset = Number(headers["x-ratelimit-reset"]);
    const retryAfter = Number(headers["retry-after"]);
    const seconds = Number.isFinite(retryAfter)
      ? retryAfter
      : Number.isFinite(reset)
        ? Math.max(1, reset - Math.floor(Date.now() / 1000))
        : 60;
    return new ApiError(
      503,
      "codehost_rate_limited",
      `the code host's rate limit for ${identity} is spent (${said}); retry after ${seconds}s, or give svc a token of its own`,
      { retryAfter: seconds },
    );
  }
  if (status === 401)
    return new ApiError(
      502,
      "codehost_unauthorized",
      `the code host refused ${identity} with 401 (${said}); store a valid token in codehost.token and restart the daemon`,
    );
  if (status === 403)
    return new ApiError(
      502,
      "codehost_forbidden",
      `the code host refused ${identity} access to ${repo} with 403 (${said}); grant that identity read access to ${repo} (contents and pull requests)`,
    );
  if (status === 404)
    return new ApiError(
      404,
      "codehost_not_found",
      `the code host answers 404 for ${repo} with ${identity}: the repository does not exist or the identity cannot see it; fix repos."${repo}" in daemon.yaml or grant the identity access`,
    );
  return new ApiError(
    502,
    "codehost_unavailable",
    `the code host did not answer for ${repo} (${status ? `HTTP ${status}: ` : ""}${said}); retry later`,
  );
}
