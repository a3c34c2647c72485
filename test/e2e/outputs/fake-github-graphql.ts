/**
 * The fake GitHub's GraphQL endpoint (`POST /graphql`), for the two operations svc sends: a pull
 * request's `reviewThreads` and `resolveReviewThread`. Answers as api.github.com does: 200 with
 * `data`, and `errors` (type NOT_FOUND) for an unknown node; the caller checks `authorization`.
 */
export interface FakeThread {
  id: string;
  /** `owner/repo#number` */
  pull: string;
  isResolved: boolean;
  isOutdated: boolean;
  /** the review ids of its comments, the first one opening the thread */
  reviewIds: number[];
  /** the REST id of the comment opening the thread (GraphQL's `databaseId`) */
  commentId?: number;
  /** who resolved it (GraphQL's `resolvedBy`): a person on GitHub, or the token's login by the mutation */
  resolvedBy?: string;
}

export interface GraphqlAnswer {
  status: number;
  body: unknown;
}

const PAGE = 100;

export function answerGraphql(
  threads: FakeThread[],
  pulls: ReadonlySet<string>,
  request: unknown,
  login?: string,
): GraphqlAnswer {
  const { query, variables } = (request ?? {}) as { query?: unknown; variables?: Record<string, unknown> };
  if (typeof query !== "string")
    return {
      status: 400,
      body: { message: "Problems parsing JSON", documentation_url: "https://docs.github.com/graphql" },
    };
  const vars = variables ?? {};
  if (/\bresolveReviewThread\s*\(/.test(query)) {
    const thread = threads.find((entry) => entry.id === vars.threadId);
    if (!thread)
      return {
        status: 200,
        body: {
          data: { resolveReviewThread: null },
          errors: [
            {
              type: "NOT_FOUND",
              path: ["resolveReviewThread"],
              locations: [{ line: 2, column: 3 }],
              message: `Could not resolve to a node with the global id of '${String(vars.threadId)}'`,
            },
          ],
        },
      };
    thread.isResolved = true;
    if (login) thread.resolvedBy = login;
    return {
      status: 200,
      body: { data: { resolveReviewThread: { thread: { id: thread.id, isResolved: true } } } },
    };
  }
  if (/\breviewThreads\s*\(/.test(query)) {
    const pull = `${String(vars.owner)}/${String(vars.repo)}#${String(vars.number)}`;
    if (!pulls.has(pull))
      return {
        status: 200,
        body: {
          data: { repository: { pullRequest: null } },
          errors: [
            {
              type: "NOT_FOUND",
              path: ["repository", "pullRequest"],
              locations: [{ line: 3, column: 5 }],
              message: `Could not resolve to a PullRequest with the number of ${String(vars.number)}.`,
            },
          ],
        },
      };
    const all = threads.filter((thread) => thread.pull === pull);
    const start = typeof vars.after === "string" ? Number(Buffer.from(vars.after, "base64").toString()) : 0;
    const page = all.slice(start, start + PAGE);
    const end = start + page.length;
    return {
      status: 200,
      body: {
        data: {
          repository: {
            pullRequest: {
              reviewThreads: {
                nodes: page.map((thread) => ({
                  id: thread.id,
                  isResolved: thread.isResolved,
                  isOutdated: thread.isOutdated,
                  resolvedBy: thread.isResolved && thread.resolvedBy ? { login: thread.resolvedBy } : null,
                  comments: {
                    nodes: [
                      {
                        databaseId: thread.commentId ?? null,
                        pullRequestReview: { databaseId: thread.reviewIds[0] },
                      },
                    ],
                  },
                })),
                pageInfo: {
                  hasNextPage: end < all.length,
                  endCursor: page.length ? Buffer.from(String(end)).toString("base64") : null,
                },
              },
            },
          },
        },
      },
    };
  }
  return {
    status: 200,
    body: {
      errors: [
        {
          path: ["query"],
          extensions: { code: "undefinedField" },
          locations: [{ line: 1, column: 1 }],
          message: "This fake answers reviewThreads and resolveReviewThread only",
        },
      ],
    },
  };
}
