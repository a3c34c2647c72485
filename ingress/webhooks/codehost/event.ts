/** `<X-GitHub-Event>.<payload.action>`, or the bare event when the payload has no action (push, ping). */
export function codehostEventName(event: string, payload: unknown): string {
  const action = isObject(payload) ? payload.action : undefined;
  return typeof action === "string" && action !== "" ? `${event}.${action}` : event;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
