import { PublishError, redact } from "./attempt.ts";
import { type CodehostPublisher, codehostFailure, type PullRef } from "./codehost.ts";

/**
 * A pull request's review threads through GitHub's GraphQL API (REST has no threads and cannot
 * resolve one): which are outdated, and whose review opened them; and `resolveReviewThread`.
 */
export interface ReviewThread {
  id: string;
  isResolved: boolean;
  isOutdated: boolean;
  /** the database id of the review whose comment opened the thread */
  reviewId: number | null;
  /** the REST id of the comment that opened it: where its finding's fingerprint is */
  commentId: number | null;
  /** who resolved it, while it is resolved (a dismissal counts a member's only: dismissals.ts) */
  resolvedBy: string | null;
}

const THREADS = `query($owner: String!, $repo: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        nodes {
          id isResolved isOutdated resolvedBy { login }
          comments(first: 1) { nodes { databaseId pullRequestReview { databaseId } } }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`;

const RESOLVE = `mutation($threadId: ID!) {
  resolveReviewThread(input: { threadId: $threadId }) { thread { id isResolved } }
}`;

const MAX_PAGES = 20;

interface ThreadsPage {
  repository: {
    pullRequest: {
      reviewThreads: {
        nodes: {
          id: string;
          isResolved: boolean;
          isOutdated: boolean;
          resolvedBy: { login: string } | null;
          comments: {
            nodes: { databaseId: number | null; pullRequestReview: { databaseId: number } | null }[];
          };
        }[];
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
      };
    } | null;
  } | null;
}

/** GraphQL answers 200 with `errors` for a refused query: judged like a REST refusal. */
function graphqlFailure(error: unknown, token: string): PublishError {
  const errors = (error as { errors?: { message?: string }[] }).errors;
  if (!Array.isArray(errors)) return codehostFailure(error, token);
  return new PublishError({
    kind: "final",
    status: "graphql",
    message: redact(errors.map((entry) => entry.message ?? "error").join("; "), [token]),
  });
}

export async function reviewThreads(codehost: CodehostPublisher, ref: PullRef): Promise<ReviewThread[]> {
  const threads: ReviewThread[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    let data: ThreadsPage;
    try {
      data = await codehost.client.graphql<ThreadsPage>(THREADS, {
        owner: ref.owner,
        repo: ref.repo,
        number: ref.number,
        after,
      });
    } catch (error) {
      throw graphqlFailure(error, codehost.token);
    }
    const list = data.repository?.pullRequest?.reviewThreads;
    if (!list) break;
    for (const node of list.nodes)
      threads.push({
        id: node.id,
        isResolved: node.isResolved,
        isOutdated: node.isOutdated,
        reviewId: node.comments.nodes[0]?.pullRequestReview?.databaseId ?? null,
        commentId: node.comments.nodes[0]?.databaseId ?? null,
        resolvedBy: node.isResolved ? (node.resolvedBy?.login ?? null) : null,
      });
    if (!list.pageInfo.hasNextPage) break;
    after = list.pageInfo.endCursor;
  }
  return threads;
}

export async function resolveThread(codehost: CodehostPublisher, threadId: string): Promise<void> {
  try {
    await codehost.client.graphql(RESOLVE, { threadId, request: { retries: 0 } });
  } catch (error) {
    throw graphqlFailure(error, codehost.token);
  }
}
