import { Octokit } from "@octokit/core";

/**
 * The GitHub reads dispatch makes about an event its payload cannot settle: the repository
 * permission of the user who sent it, the head of the pull request a comment is on, and the files a
 * pull request changes (for `paths` trigger filters). Asked while
 * the dispatch transaction holds its locks, so each is one short try (an unanswered one is judged
 * as a stranger's anyway, and other dispatches wait on it); the caller reports the failure.
 */
export class GithubReadError extends Error {
  /** GitHub's status, 0 when it did not answer */
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "GithubReadError";
    this.status = status;
  }
}

const TIMEOUT_MS = 5_000;
const QUIET = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export type GithubReader = InstanceType<typeof Octokit>;

export function githubReader(options: { apiUrl: string; token: string }): GithubReader {
  return new Octokit({
    auth: options.token,
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    userAgent: "svc-dispatch",
    log: QUIET,
  });
}

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const str = (value: unknown): string | undefined =>
  typeof value === "string" && value.length > 0 ? value : undefined;

function split(repo: string): { owner: string; repo: string } {
  const slash = repo.indexOf("/");
  return { owner: repo.slice(0, slash), repo: repo.slice(slash + 1) };
}

async function read(call: () => Promise<{ data: unknown }>): Promise<unknown> {
  try {
    return (await call()).data;
  } catch (error) {
    const e = error as { status?: number; message?: string; response?: { data?: { message?: unknown } } };
    const said = e.response?.data?.message;
    throw new GithubReadError(
      e.response ? (e.status ?? 0) : 0,
      typeof said === "string" ? said : (e.message ?? String(error)),
    );
  }
}

/**
 * `GET /repos/{owner}/{repo}/collaborators/{username}/permission`: `admin`, `write`, `read` or
 * `none` (GitHub folds maintain into write and triage into read). A user GitHub does not know as a
 * collaborator (404) has none.
 */
export async function repositoryPermission(
  client: GithubReader,
  repo: string,
  username: string,
): Promise<string> {
  try {
    const data = await read(() =>
      client.request("GET /repos/{owner}/{repo}/collaborators/{username}/permission", {
        ...split(repo),
        username,
        request: { signal: AbortSignal.timeout(TIMEOUT_MS) },
      }),
    );
    return str(obj(data)?.permission) ?? "none";
  } catch (error) {
    if (error instanceof GithubReadError && error.status === 404) return "none";
    throw error;
  }
}

/**
 * What a repository permission makes its holder for the author gates: GitHub's permission says
 * what the user may do, not how they belong (org member or outside collaborator), so admin counts
 * as owner, write as member, and a reader as no insider (`none`).
 */
export function associationOfPermission(permission: string): "owner" | "member" | "none" {
  if (permission === "admin") return "owner";
  if (permission === "write" || permission === "maintain") return "member";
  return "none";
}

/** A pull request's head and base as `GET /repos/{owner}/{repo}/pulls/{pull_number}` states them. */
export interface PullHead {
  sha: string;
  ref: string;
  /** the head repository's `full_name`, null once that repository (a fork) is deleted */
  repo: string | null;
  base: { sha: string; ref: string; repo: string | null };
}

export async function pullRequestHead(client: GithubReader, repo: string, number: number): Promise<PullHead> {
  const data = obj(
    await read(() =>
      client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...split(repo),
        pull_number: number,
        request: { signal: AbortSignal.timeout(TIMEOUT_MS) },
      }),
    ),
  );
  const head = obj(data?.head);
  const base = obj(data?.base);
  const sha = str(head?.sha);
  const ref = str(head?.ref);
  const baseSha = str(base?.sha);
  const baseRef = str(base?.ref);
  if (!sha || !ref || !baseSha || !baseRef)
    throw new GithubReadError(200, `GitHub's answer for ${repo}#${number} names no head or base commit`);
  return {
    sha,
    ref,
    repo: str(obj(head?.repo)?.full_name) ?? null,
    base: { sha: baseSha, ref: baseRef, repo: str(obj(base?.repo)?.full_name) ?? null },
  };
}

/** GitHub lists at most 3,000 files of a pull request, 100 a page. */
const FILE_PAGES = 30;

/**
 * The paths a pull request changes (`GET /repos/{owner}/{repo}/pulls/{pull_number}/files`, paged),
 * a renamed file's old path too, as GitHub Actions' `paths` judges a move out of a folder.
 * `complete` is false when GitHub's 3,000-file list is full: more may have changed.
 */
export async function pullRequestFiles(
  client: GithubReader,
  repo: string,
  number: number,
): Promise<{ files: string[]; complete: boolean }> {
  const files: string[] = [];
  // one deadline for the whole list: dispatch holds its locks while it reads
  const signal = AbortSignal.timeout(TIMEOUT_MS * 2);
  for (let page = 1; page <= FILE_PAGES; page += 1) {
    const data = await read(() =>
      client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
        ...split(repo),
        pull_number: number,
        per_page: 100,
        page,
        request: { signal },
      }),
    );
    if (!Array.isArray(data))
      throw new GithubReadError(200, `GitHub's answer for the files of ${repo}#${number} is not a list`);
    for (const entry of data) {
      const file = obj(entry);
      for (const path of [str(file?.filename), str(file?.previous_filename)]) if (path) files.push(path);
    }
    if (data.length < 100) return { files, complete: true };
  }
  return { files, complete: false };
}
