/** `<payload.type>.<payload.action>` (`Issue.create`), the bare type without an action; undefined without a type. */
export function trackerEventName(payload: unknown): string | undefined {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return undefined;
  const { type, action } = payload as { type?: unknown; action?: unknown };
  if (typeof type !== "string" || type === "") return undefined;
  return typeof action === "string" && action !== "" ? `${type}.${action}` : type;
}
