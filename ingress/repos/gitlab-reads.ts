import { GitlabApiError, type GitlabClient, gitlabClient } from "../../shared/codehost/gitlab.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { ApiError } from "../api/errors.ts";
import type { CodehostReads } from "./codehost-reads.ts";

/**
 * The reads a backtest makes of GitLab (`codehost.kind: gitlab`), with `codehost.token`, in the
 * shapes the comparison reads GitHub's in (ingress/evals/backtest-compare.ts): a merge request's
 * human comments are the notes of its discussions (`GET …/merge_requests/:iid/discussions`) that
 * a person wrote, not svc's user (`GET /user`) nor GitLab's system notes, each at the line its
 * diff position names; the lines fixed later are the diffs of GitLab's comparison of the two heads
 * (`GET …/repository/compare?from=&to=`, from their merge base as GitHub's `base...head`).
 */
export type BacktestReads = Pick<CodehostReads, "reviewComments" | "compare">;

const PAGE = 100;
const MAX_PAGES = 20;

interface Note {
  body?: string;
  system?: boolean;
  author?: { id: number; username?: string; bot?: boolean } | null;
  position?: {
    old_path?: string | null;
    new_path?: string | null;
    old_line?: number | null;
    new_line?: number | null;
  } | null;
}

interface Diff {
  old_path: string;
  new_path: string;
  diff?: string;
  new_file?: boolean;
  renamed_file?: boolean;
  deleted_file?: boolean;
}

export function gitlabBacktestReads(deps: {
  config: Readonly<ConfigSnapshot>;
  resolveSecret: (source: SecretSource) => string;
}): BacktestReads {
  let client: { gitlab: GitlabClient; token: string; self: Promise<number> } | undefined;
  const connect = () => {
    const codehost = deps.config.codehost;
    if (!codehost?.token)
      throw new ApiError(
        503,
        "codehost_not_configured",
        "daemon.yaml sets no codehost.token; with codehost.kind: gitlab give svc's GitLab user's token in codehost.token and restart the daemon to read merge requests",
      );
    const token = deps.resolveSecret(codehost.token);
    if (client?.token !== token) {
      const gitlab = gitlabClient({ apiUrl: codehost.apiUrl, token });
      const self = gitlab.Users.showCurrentUser().then((user) => user.id as number);
      // a refused /user is reported by the read that needs it, and asked again next time
      self.catch(() => {
        client = undefined;
      });
      client = { gitlab, token, self };
    }
    return client;
  };
  return {
    async reviewComments(repo, number) {
      const { gitlab, token, self } = connect();
      try {
        const me = await self;
        const discussions = (await gitlab.MergeRequestDiscussions.all(repo, number, {
          perPage: PAGE,
          maxPages: MAX_PAGES,
        })) as unknown as { notes?: Note[] }[];
        return discussions.flatMap((discussion) =>
          (discussion.notes ?? []).flatMap((note) => {
            if (note.system || !note.author || note.author.id === me) return [];
            const position = note.position;
            const right = position?.new_line != null;
            const path = (right ? position?.new_path : position?.old_path) ?? position?.new_path ?? "";
            const line = (right ? position?.new_line : position?.old_line) ?? null;
            return [
              {
                path,
                line,
                user: {
                  login: note.author.username ?? String(note.author.id),
                  ...(note.author.bot ? { type: "Bot" } : {}),
                },
                body: note.body ?? "",
              },
            ];
          }),
        );
      } catch (error) {
        throw refusal(error, repo, token);
      }
    },
    async compare(repo, base, head) {
      const { gitlab, token } = connect();
      try {
        const compared = await gitlab.Repositories.compare(repo, base, head);
        return ((compared.diffs ?? []) as unknown as Diff[]).map((diff) => ({
          filename: diff.new_path,
          status: diff.new_file
            ? "added"
            : diff.deleted_file
              ? "removed"
              : diff.renamed_file
                ? "renamed"
                : "modified",
          ...(diff.renamed_file ? { previous_filename: diff.old_path } : {}),
          // GitLab leaves out the diff of a file too large to show: counted whole, as GitHub's
          ...(diff.diff ? { patch: diff.diff } : {}),
        }));
      } catch (error) {
        throw refusal(error, repo, token);
      }
    },
  };
}

/** A GitLab refusal as an answer naming the identity and the fix; the token is cut from any text. */
function refusal(error: unknown, repo: string, token: string): ApiError {
  if (error instanceof ApiError) return error;
  const status = error instanceof GitlabApiError ? error.status : 0;
  const said = (error instanceof GitlabApiError ? error.hostMessage : String(error))
    .split(token)
    .join("[redacted]");
  const identity = "codehost.token (svc's GitLab user)";
  if (status === 401)
    return new ApiError(
      502,
      "codehost_unauthorized",
      `GitLab refused ${identity} with 401 (${said}); store a valid token in codehost.token and restart the daemon`,
    );
  if (status === 403 || status === 404)
    return new ApiError(
      status === 404 ? 404 : 502,
      status === 404 ? "codehost_not_found" : "codehost_forbidden",
      `GitLab answers ${status} for ${repo} with ${identity} (${said}): give that user Reporter access or above to ${repo}`,
    );
  if (status === 429)
    return new ApiError(
      503,
      "codehost_rate_limited",
      `GitLab's rate limit for ${identity} is spent (${said}); retry later`,
      {
        retryAfter: error instanceof GitlabApiError && error.retryAfter !== undefined ? error.retryAfter : 60,
      },
    );
  return new ApiError(
    502,
    "codehost_unavailable",
    `GitLab did not answer for ${repo} (${status ? `HTTP ${status}: ` : ""}${said}); retry later`,
  );
}
