/**
 * An abort signal that fires with `parent` or once `ms` have passed, whichever comes first. The
 * agent sees one signal; `expired()` tells the caller the time ran out (a timeout, not a stop).
 */
export function withDeadline(
  parent: AbortSignal,
  ms: number | undefined,
): { signal: AbortSignal; expired(): boolean; clear(): void } {
  if (!ms) return { signal: parent, expired: () => false, clear: () => {} };
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort();
  parent.addEventListener("abort", onAbort, { once: true });
  if (parent.aborted) controller.abort();
  const timer = setTimeout(() => {
    expired = true;
    controller.abort();
  }, ms);
  timer.unref();
  return {
    signal: controller.signal,
    expired: () => expired && !parent.aborted,
    clear: () => {
      clearTimeout(timer);
      parent.removeEventListener("abort", onAbort);
    },
  };
}
