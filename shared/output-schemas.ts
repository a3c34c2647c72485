/**
 * The schemas behind the output handlers' ids. A pipeline's `result.schema` references them by
 * `$ref`, so validation needs them registered; they describe what each handler publishes. The
 * worker validates with them and `svc schema show` prints them, so they live here, shared.
 */
const comment = {
  $id: "svc://schemas/codehost/comment/v1",
  title: "codehost.comment",
  description:
    "A comment on an issue or pull request. repo and number default to the triggering issue or pull request.",
  type: "object",
  properties: {
    body: { type: "string", minLength: 1 },
    repo: { type: "string", pattern: "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$" },
    number: { type: "integer", minimum: 1 },
  },
  required: ["body"],
  additionalProperties: false,
};

const reviewComment = {
  type: "object",
  properties: {
    path: { type: "string", minLength: 1 },
    line: { type: "integer", minimum: 1 },
    side: { enum: ["LEFT", "RIGHT"] },
    start_line: { type: "integer", minimum: 1 },
    body: { type: "string", minLength: 1 },
  },
  required: ["path", "line", "body"],
  additionalProperties: false,
};

const review = {
  $id: "svc://schemas/codehost/review/v1",
  title: "codehost.review",
  description:
    "A review of the triggering pull request. Inline comments on lines outside the diff move into the body.",
  type: "object",
  properties: {
    event: { enum: ["COMMENT", "APPROVE", "REQUEST_CHANGES"] },
    body: { type: "string" },
    comments: { type: "array", items: reviewComment },
  },
  required: ["event", "body"],
  additionalProperties: false,
};

const reply = {
  type: "object",
  properties: {
    in_reply_to: { type: "integer", minimum: 1, description: "the id of a review comment" },
    body: { type: "string", minLength: 1 },
  },
  required: ["in_reply_to", "body"],
  additionalProperties: false,
};

const reviewCommentReply = {
  $id: "svc://schemas/codehost/review-comment-reply/v1",
  title: "codehost.review-comment-reply",
  description: "A reply to one review comment of the triggering pull request.",
  ...reply,
};

const reviewReplies = {
  $id: "svc://schemas/codehost/review-replies/v1",
  title: "codehost.review-replies",
  description: "Replies to several review comments of the triggering pull request.",
  type: "object",
  properties: { replies: { type: "array", items: reply } },
  required: ["replies"],
  additionalProperties: false,
};

const chatMessage = {
  $id: "svc://schemas/chat/message/v1",
  title: "chat.message",
  description:
    "A chat message to the configured channel: text (always sent, the notification fallback), optional Block Kit blocks and a thread to answer in.",
  type: "object",
  properties: {
    text: { type: "string", minLength: 1 },
    blocks: { type: "array", items: { type: "object", required: ["type"] } },
    thread_ts: { type: "string", minLength: 1 },
  },
  required: ["text"],
  additionalProperties: false,
};

export const HANDLER_SCHEMAS: readonly Record<string, unknown>[] = [
  comment,
  review,
  reviewCommentReply,
  reviewReplies,
  chatMessage,
];

export function handlerSchema(id: string): Record<string, unknown> | undefined {
  return HANDLER_SCHEMAS.find((schema) => schema.$id === id);
}

/** Shapes the publishing code reads, as the schemas above guarantee them. */
export interface CommentResult {
  body: string;
  repo?: string;
  number?: number;
}
export interface ReviewInline {
  path: string;
  line: number;
  side?: "LEFT" | "RIGHT";
  start_line?: number;
  body: string;
}
export interface ReviewResult {
  event: "COMMENT" | "APPROVE" | "REQUEST_CHANGES";
  body: string;
  comments?: ReviewInline[];
}
export interface ReplyResult {
  in_reply_to: number;
  body: string;
}
export interface ChatMessageResult {
  text: string;
  blocks?: Record<string, unknown>[];
  thread_ts?: string;
}
