/** Old `output:` kinds and the handler (and result key) that replaced each in 0.10.0. */
const KINDS: Record<string, { handler: string; key: string }> = {
  comment: { handler: "codehost.comment", key: "comment" },
  review: { handler: "codehost.review", key: "review" },
  "review-comment-reply": { handler: "codehost.review-comment-reply", key: "reply" },
  "review-replies": { handler: "codehost.review-replies", key: "replies" },
  chat: { handler: "chat.message", key: "message" },
  message: { handler: "chat.message", key: "message" },
};
const SCHEMAS: Record<string, string> = {
  "codehost.comment": "svc://schemas/codehost/comment/v1",
  "codehost.review": "svc://schemas/codehost/review/v1",
  "codehost.review-comment-reply": "svc://schemas/codehost/review-comment-reply/v1",
  "codehost.review-replies": "svc://schemas/codehost/review-replies/v1",
  "chat.message": "svc://schemas/chat/message/v1",
};
for (const [handler] of Object.entries(SCHEMAS))
  KINDS[handler] ??= { handler, key: handler.split(/[.-]/).pop()! };

/** removed in 0.10.0 with no replacement (contract, "Output handlers") */
const REMOVED = ["upsert-comment", "inline-review", "diff", "tracker", "issue", "issue-tracker"];

export interface ConvertedOutput {
  result: { schema: Record<string, unknown> };
  outputs: Record<string, Record<string, unknown>>;
}

/**
 * `output: review`, `output: { type: chat, channel: C01 }` or a list of such → `result.schema` plus
 * `outputs`. A kind without replacement, or a chat output whose bot or channel is unknown, gives the
 * reason it cannot be converted.
 */
export function convertOutput(value: unknown, bots: readonly string[]): ConvertedOutput | { reason: string } {
  const items = Array.isArray(value) ? value : [value];
  const properties: Record<string, unknown> = {};
  const outputs: Record<string, Record<string, unknown>> = {};
  for (const item of items) {
    const spec = typeof item === "string" ? { type: item } : (item as Record<string, unknown> | null);
    const kind =
      spec && typeof (spec.type ?? spec.handler) === "string" ? String(spec.type ?? spec.handler) : undefined;
    if (!kind) return { reason: "an output entry names no type" };
    if (REMOVED.includes(kind))
      return {
        reason: `the ${kind} output was removed with no replacement (an agent writes to the tracker through its own tools; comments go through codehost.comment)`,
      };
    const known = KINDS[kind];
    if (!known) return { reason: `output type ${JSON.stringify(kind)} is not one svc knows` };
    let key = typeof spec!.key === "string" ? spec!.key : known.key;
    for (let n = 2; outputs[key]; n++) key = `${known.key}-${n}`;
    const binding: Record<string, unknown> = { handler: known.handler };
    if (known.handler === "chat.message") {
      const bot = typeof spec!.bot === "string" ? spec!.bot : bots.length === 1 ? bots[0] : undefined;
      const channel = spec!.channel;
      if (!bot || typeof channel !== "string")
        return {
          reason: `a chat output needs { bot, channel }: ${!bot ? "name a bot of channels.chat.bots" : "give the channel id"}`,
        };
      binding.config = { bot, channel };
    }
    properties[key] = { $ref: SCHEMAS[known.handler] };
    outputs[key] = binding;
  }
  return {
    result: { schema: { type: "object", properties, required: Object.keys(properties) } },
    outputs,
  };
}
