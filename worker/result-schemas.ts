/**
 * The schemas behind the output handlers' ids. A pipeline's `result.schema` references them by
 * `$ref`, so validation needs them registered; they describe what each handler publishes.
 */
const comment = {
  $id: "svc://schemas/codehost/comment/v1",
  type: "object",
  properties: { body: { type: "string", minLength: 1 } },
  required: ["body"],
};

const reviewComment = {
  type: "object",
  properties: {
    path: { type: "string", minLength: 1 },
    line: { type: "integer", minimum: 1 },
    body: { type: "string", minLength: 1 },
  },
  required: ["path", "line", "body"],
};

const review = {
  $id: "svc://schemas/codehost/review/v1",
  type: "object",
  properties: {
    event: { enum: ["COMMENT", "APPROVE", "REQUEST_CHANGES"] },
    body: { type: "string" },
    comments: { type: "array", items: reviewComment },
  },
  required: ["event", "body"],
};

const reply = {
  type: "object",
  properties: { comment_id: { type: "integer" }, body: { type: "string", minLength: 1 } },
  required: ["comment_id", "body"],
};

const reviewCommentReply = { $id: "svc://schemas/codehost/review-comment-reply/v1", ...reply };

const reviewReplies = {
  $id: "svc://schemas/codehost/review-replies/v1",
  type: "object",
  properties: { replies: { type: "array", items: reply } },
  required: ["replies"],
};

const chatMessage = {
  $id: "svc://schemas/chat/message/v1",
  type: "object",
  properties: { text: { type: "string", minLength: 1 } },
  required: ["text"],
};

export const HANDLER_SCHEMAS: Record<string, unknown>[] = [
  comment,
  review,
  reviewCommentReply,
  reviewReplies,
  chatMessage,
];
