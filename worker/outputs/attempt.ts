/**
 * How a failed request to a code host or chat API is judged: `retry` (5xx, network errors, rate
 * limits — the request may or may not have landed) or `final` (any other refusal). Messages are
 * the host's own words, with every known token removed.
 */
export interface PublishFailure {
  kind: "retry" | "final";
  /** HTTP status, or the chat API's error code */
  status: string;
  message: string;
  /** seconds the host asked us to wait (`Retry-After`) */
  retryAfter?: number;
}

export class PublishError extends Error {
  readonly failure: PublishFailure;
  constructor(failure: PublishFailure) {
    super(failure.message);
    this.failure = failure;
  }
}

/** Removes every secret from a message: a host may echo a header back in an error body. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out;
}
