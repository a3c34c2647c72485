/**
 * The event name of a GitLab delivery, what `trigger.codehost` matches: a merge request's
 * `merge_request.<object_attributes.action>` (`merge_request.open`, `merge_request.update`, …,
 * the bare `merge_request` when it states no action), and every other delivery its `object_kind`
 * alone (`note`, `push`, `tag_push`, `pipeline`). Comments stay `note` whether created or edited,
 * the name GitLab's relayed notes already had (worker/event/command.ts). The payload, not the
 * `X-Gitlab-Event` header, names it: the header's values (`Merge Request Hook`) are display names,
 * and the body is what the token vouches for. Undefined without an `object_kind`.
 */
export function gitlabEventName(payload: unknown): string | undefined {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return undefined;
  const { object_kind: kind, object_attributes: attributes } = payload as {
    object_kind?: unknown;
    object_attributes?: unknown;
  };
  if (typeof kind !== "string" || kind === "") return undefined;
  if (kind !== "merge_request" || typeof attributes !== "object" || attributes === null) return kind;
  const action = (attributes as { action?: unknown }).action;
  return typeof action === "string" && action !== "" ? `${kind}.${action}` : kind;
}
