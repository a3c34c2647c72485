/**
 * A reply in a review thread (GitHub's `pull_request_review_comment.created` whose comment has an
 * `in_reply_to_id`), as `trigger.codehost: [{ replies: true }]` answers it. svc's own replies are
 * none: they carry svc's stamp (`<!-- svc:…`) or come from a bot account, and answering them would
 * loop. Whether the thread is svc's own is asked of GitHub by the run (worker/run/thread.ts: its first
 * comment must be of a review svc posted, db/output-deliveries.ts ownReviewIds), never read from the payload.
 */
export interface ThreadReply {
  /** the reply's id: the `in_reply_to` of the answer, which GitHub places in the same thread */
  commentId: number;
  /** the comment the thread opened with */
  inReplyTo: number;
  path: string;
  body: string;
  login: string | null;
  /** the lines the thread is on, as GitHub's `diff_hunk` shows them */
  diffHunk: string;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
}

const SVC_STAMP = /<!-- svc:/;

export function readReply(eventName: string, payload: unknown): ThreadReply | null {
  if (eventName !== "pull_request_review_comment.created") return null;
  const comment = obj(obj(payload)?.comment);
  if (!comment || typeof comment.id !== "number" || typeof comment.in_reply_to_id !== "number") return null;
  const body = typeof comment.body === "string" ? comment.body : "";
  const user = obj(comment.user);
  if (SVC_STAMP.test(body) || user?.type === "Bot" || obj(comment.performed_via_github_app)) return null;
  return {
    commentId: comment.id,
    inReplyTo: comment.in_reply_to_id,
    path: typeof comment.path === "string" ? comment.path : "",
    body,
    login: typeof user?.login === "string" ? user.login : null,
    diffHunk: typeof comment.diff_hunk === "string" ? comment.diff_hunk : "",
  };
}
