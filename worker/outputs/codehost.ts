import { Octokit } from "@octokit/core";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import type { Logger } from "../../shared/logger.ts";
import { octokitLog } from "../../shared/octokit-log.ts";
import { PublishError, redact } from "./attempt.ts";
import type { Remote } from "./delivery.ts";
import { hasMarker, type Sealed } from "./render.ts";

/**
 * The code-host client (GitHub REST through Octokit). Reads retry on their own (plugin-retry);
 * writes never do — a lost answer is judged by delivery.ts, which looks for the marker first —
 * except on a rate limit, where the host refused the request and `Retry-After` is honoured.
 */
const CodehostOctokit = Octokit.plugin(retry, throttling);
export type CodehostClient = InstanceType<typeof CodehostOctokit>;

const MAX_RATE_LIMIT_WAIT_S = 60;
const PAGE = 100;
const MAX_PAGES = 20;

export function codehostClient(options: { apiUrl: string; token: string; logger: Logger }): CodehostClient {
  const { logger } = options;
  const onLimit = (
    retryAfter: number,
    request: { method: string; url: string },
    _o: unknown,
    count: number,
  ) => {
    logger.warn("code host rate limit: waiting", {
      event: "output.rate_limited",
      method: request.method,
      url: request.url,
      retry_after: retryAfter,
    });
    return count < 2 && retryAfter <= MAX_RATE_LIMIT_WAIT_S;
  };
  return new CodehostOctokit({
    auth: options.token,
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    userAgent: "svc-outputs",
    throttle: { onRateLimit: onLimit, onSecondaryRateLimit: onLimit },
    retry: { doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451] },
    log: octokitLog(logger, "output"),
  });
}

/** Turns an Octokit error into a judged failure; the token never reaches the message. */
export function codehostFailure(error: unknown, token: string): PublishError {
  const e = error as {
    status?: number;
    message?: string;
    response?: { headers?: Record<string, string | undefined>; data?: { message?: string } };
  };
  const status = e.status ?? 0;
  const hostMessage = e.response?.data?.message ?? e.message ?? String(error);
  const retryAfter = Number(e.response?.headers?.["retry-after"]);
  const rateLimited =
    status === 429 || (status === 403 && (/rate limit/i.test(hostMessage) || Number.isFinite(retryAfter)));
  const network = !e.response;
  return new PublishError({
    kind: network || status >= 500 || rateLimited ? "retry" : "final",
    status: network ? "network" : String(status),
    message: redact(hostMessage, [token]),
    ...(Number.isFinite(retryAfter) ? { retryAfter } : {}),
  });
}

export interface PullRef {
  owner: string;
  repo: string;
  number: number;
}

/**
 * `repo` split at its last slash: a GitHub `owner/name`, or a GitLab project in a subgroup
 * (`group/sub/project`: owner `group/sub`). `owner` is empty for a name without one.
 */
export function pullRefOf(repo: string, number: number): PullRef {
  const slash = repo.lastIndexOf("/");
  return { owner: slash > 0 ? repo.slice(0, slash) : "", repo: repo.slice(slash + 1), number };
}

async function write<T>(token: string, request: () => Promise<{ data: T }>): Promise<T> {
  try {
    return (await request()).data;
  } catch (error) {
    throw codehostFailure(error, token);
  }
}

/** Pages through a list until a page comes back short. */
async function listAll<T>(token: string, fetchPage: (page: number) => Promise<{ data: T[] }>): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; page <= MAX_PAGES; page += 1) {
    const data = await write(token, () => fetchPage(page));
    all.push(...data);
    if (data.length < PAGE) break;
  }
  return all;
}

/** What svc reads of a review comment: `line` is null once the lines it was on changed (outdated). */
export interface ReviewComment {
  id: number | bigint;
  body: string;
  path: string;
  line?: number | null;
  pull_request_review_id: number | bigint | null;
  in_reply_to_id?: number;
  start_line?: number | null;
  original_line?: number | null;
  diff_hunk?: string;
  user?: { login?: string } | null;
}

type Posted = {
  id: number | bigint;
  html_url?: string;
  body?: string | null;
  user?: { login?: string } | null;
  performed_via_github_app?: { id?: number } | null;
};

/**
 * Who svc is on GitHub, to tell its own comments and reviews from anyone else's: a GitHub App (its
 * id, which GitHub names on an issue comment as `performed_via_github_app`, and its slug, whose
 * `<slug>[bot]` is the author of its reviews and review comments), or the account a token belongs to.
 */
export type OwnAuthor = { app: number; slug: () => string | undefined } | { token: true };

const remoteOf = (posted: Posted): Remote => ({ id: String(posted.id), url: posted.html_url ?? null });

export class CodehostPublisher {
  readonly #client: CodehostClient;
  readonly #token: string;
  readonly #own: OwnAuthor;
  #login: Promise<string> | undefined;

  get client(): CodehostClient {
    return this.#client;
  }

  get token(): string {
    return this.#token;
  }

  constructor(client: CodehostClient, token: string, own: OwnAuthor = { token: true }) {
    this.#client = client;
    this.#token = token;
    this.#own = own;
  }

  /**
   * Whether svc's own identity wrote `posted`. A marker alone proves nothing: whoever can comment
   * on the pull request can write one, so svc adopts or edits a comment only when it wrote it.
   */
  async #wrote(posted: Posted): Promise<boolean> {
    const login = posted.user?.login?.toLowerCase();
    if ("app" in this.#own) {
      if (posted.performed_via_github_app?.id === this.#own.app) return true;
      const slug = this.#own.slug();
      return slug !== undefined && login === `${slug}[bot]`.toLowerCase();
    }
    this.#login ??= write<{ login: string }>(this.#token, () => this.#client.request("GET /user")).then(
      (user) => user.login.toLowerCase(),
    );
    return login !== undefined && login === (await this.#login);
  }

  /** The first of `items` svc wrote that carries the run's marker for `key`. */
  async #ownMarked(items: Posted[], run: Sealed, key: string): Promise<Remote | undefined> {
    for (const item of items)
      if (hasMarker(item.body, run, key) && (await this.#wrote(item))) return remoteOf(item);
    return undefined;
  }

  async postComment(ref: PullRef, body: string): Promise<Remote> {
    const posted = await write<Posted>(this.#token, () =>
      this.#client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner: ref.owner,
        repo: ref.repo,
        issue_number: ref.number,
        body,
        request: { retries: 0 },
      }),
    );
    return remoteOf(posted);
  }

  /** Edits an issue comment in place; a retry of a lost answer is the same edit again. */
  async updateComment(ref: PullRef, commentId: string, body: string): Promise<Remote> {
    const posted = await write<Posted>(this.#token, () =>
      this.#client.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
        owner: ref.owner,
        repo: ref.repo,
        comment_id: Number(commentId),
        body,
        request: { retries: 0 },
      }),
    );
    return remoteOf(posted);
  }

  async findComment(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined> {
    const comments = await listAll<Posted>(this.#token, (page) =>
      this.#client.request("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner: ref.owner,
        repo: ref.repo,
        issue_number: ref.number,
        per_page: PAGE,
        page,
      }),
    );
    return this.#ownMarked(comments, run, key);
  }

  /** The pull request's review comments (inline findings and replies), oldest first. */
  async listReviewComments(ref: PullRef): Promise<ReviewComment[]> {
    return listAll<ReviewComment>(this.#token, (page) =>
      this.#client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        per_page: PAGE,
        page,
      }),
    );
  }

  /**
   * One review comment (`GET /repos/{o}/{r}/pulls/comments/{comment_id}`), undefined when GitHub has
   * none: a deleted comment's thread is no thread svc answers in.
   */
  async readReviewComment(ref: PullRef, commentId: number): Promise<ReviewComment | undefined> {
    try {
      const { data } = await this.#client.request("GET /repos/{owner}/{repo}/pulls/comments/{comment_id}", {
        owner: ref.owner,
        repo: ref.repo,
        comment_id: commentId,
      });
      return data as ReviewComment;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return undefined;
      throw codehostFailure(error, this.#token);
    }
  }

  async listFiles(ref: PullRef): Promise<{ filename: string; patch?: string }[]> {
    return listAll(this.#token, (page) =>
      this.#client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        per_page: PAGE,
        page,
      }),
    );
  }

  async postReview(
    ref: PullRef,
    review: {
      commitId: string;
      event: "COMMENT" | "APPROVE" | "REQUEST_CHANGES";
      body: string;
      comments: { path: string; line: number; side?: "LEFT" | "RIGHT"; start_line?: number; body: string }[];
    },
  ): Promise<Remote> {
    const posted = await write<Posted>(this.#token, () =>
      this.#client.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        ...(review.commitId ? { commit_id: review.commitId } : {}),
        event: review.event,
        body: review.body,
        comments: review.comments.map((comment) => ({
          path: comment.path,
          line: comment.line,
          side: comment.side ?? "RIGHT",
          ...(comment.start_line !== undefined
            ? { start_line: comment.start_line, start_side: comment.side ?? "RIGHT" }
            : {}),
          body: comment.body,
        })),
        request: { retries: 0 },
      }),
    );
    return remoteOf(posted);
  }

  async findReview(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined> {
    const reviews = await listAll<Posted>(this.#token, (page) =>
      this.#client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        per_page: PAGE,
        page,
      }),
    );
    return this.#ownMarked(reviews, run, key);
  }

  async postReply(ref: PullRef, commentId: number, body: string): Promise<Remote> {
    const posted = await write<Posted>(this.#token, () =>
      this.#client.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        comment_id: commentId,
        body,
        request: { retries: 0 },
      }),
    );
    return remoteOf(posted);
  }

  async findReply(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined> {
    const comments = await listAll<Posted>(this.#token, (page) =>
      this.#client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", {
        owner: ref.owner,
        repo: ref.repo,
        pull_number: ref.number,
        per_page: PAGE,
        page,
      }),
    );
    return this.#ownMarked(comments, run, key);
  }
}
