/** An error the API answers with its own status and `{ error: { code, message } }` body. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function badRequest(message: string, details?: Record<string, unknown>): ApiError {
  return new ApiError(400, "invalid_request", message, details);
}

/**
 * One message per record kind, never naming the id: another owner's workload must answer exactly
 * like an id that does not exist, byte for byte.
 */
export function notFound(kind: string): ApiError {
  return new ApiError(404, "not_found", `no such ${kind}`);
}

export function conflict(code: string, message: string, details?: Record<string, unknown>): ApiError {
  return new ApiError(409, code, message, details);
}
