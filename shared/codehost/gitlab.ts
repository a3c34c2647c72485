import { createRequesterFn, type RequestOptions } from "@gitbeaker/requester-utils";
import { Gitlab } from "@gitbeaker/rest";

/**
 * svc's GitLab REST v4 client: gitbeaker's resources over a request handler of our own. Gitbeaker's
 * own handler retries every 429 and 502 up to ten times whatever the method, and a POST whose 502
 * hid a note GitLab did write would post it twice; svc's writes are judged by its delivery ledger
 * instead (worker/outputs/delivery.ts). So here: a read is retried twice on a 5xx or no answer, any
 * request on a 429 (GitLab refused it, so nothing was written) when `Retry-After` is short, and a
 * write's failure is handed back as it is.
 */
export type GitlabClient = InstanceType<typeof Gitlab<false>>;

/** A refused or failed GitLab request: the status (0: no answer) and GitLab's own message. */
export class GitlabApiError extends Error {
  readonly status: number;
  readonly hostMessage: string;
  readonly retryAfter?: number;

  constructor(status: number, hostMessage: string, retryAfter?: number) {
    super(status ? `GitLab answered ${status}: ${hostMessage}` : `GitLab did not answer: ${hostMessage}`);
    this.name = "GitlabApiError";
    this.status = status;
    this.hostMessage = hostMessage;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

const READ_RETRIES = 2;
const MAX_RATE_LIMIT_WAIT_S = 60;
const TIMEOUT_MS = 30_000;

/** The origin (and path) GitLab is served under: `api_url` without its `/api/v4`. */
export function gitlabHost(apiUrl: string): string {
  return apiUrl.replace(/\/+$/, "").replace(/\/api\/v4$/, "");
}

/** GitLab's error body: `{"message": "404 Not found"}`, `{"message": {"note": ["can't be blank"]}}` or `{"error": "…"}`. */
function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown; error_description?: unknown };
    const value = body.message ?? body.error_description ?? body.error;
    if (typeof value === "string") return value;
    if (value !== undefined) return JSON.stringify(value);
  } catch {
    // not JSON (a proxy's HTML page): its first line says enough
  }
  return text.split("\n", 1)[0]!.slice(0, 300);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long one request may take and how often a read is tried again. */
interface Patience {
  timeoutMs: number;
  readRetries: number;
}

const PATIENT: Patience = { timeoutMs: TIMEOUT_MS, readRetries: READ_RETRIES };
/**
 * For a question asked while a transaction holds locks (dispatch's members lookup): one short try,
 * since an unanswered one is judged as a stranger's author anyway and other dispatches wait on it.
 */
const BRIEF: Patience = { timeoutMs: 5_000, readRetries: 0 };

const sender = (patience: Patience) => async (endpoint: string, options?: RequestOptions) => {
  const {
    rateLimiters: _limits,
    agent: _agent,
    asStream,
    prefixUrl,
    searchParams,
    method,
    ...rest
  } = (options ?? {}) as RequestOptions & { rateLimiters?: unknown; agent?: unknown; asStream?: boolean };
  const url = new URL(endpoint, prefixUrl?.endsWith("/") ? prefixUrl : `${prefixUrl ?? ""}/`);
  url.search = searchParams ?? "";
  const read = (method ?? "GET").toUpperCase() === "GET";
  for (let attempt = 0; ; attempt += 1) {
    let response: Response;
    try {
      response = await fetch(url, {
        ...(rest as RequestInit),
        method: method ?? "GET",
        signal: AbortSignal.timeout(patience.timeoutMs),
      });
    } catch (error) {
      if (read && attempt < patience.readRetries) continue;
      throw new GitlabApiError(0, (error as Error).message);
    }
    if (response.ok) {
      const headers = Object.fromEntries(response.headers.entries());
      if (asStream) return { body: response.body, headers, status: response.status };
      const text = response.status === 204 ? "" : await response.text();
      const json = (response.headers.get("content-type") ?? "").includes("json");
      return { body: json && text ? JSON.parse(text) : text, headers, status: response.status };
    }
    const retryAfter = Number(response.headers.get("retry-after") ?? Number.NaN);
    const text = await response.text();
    const limited =
      response.status === 429 && Number.isFinite(retryAfter) && retryAfter <= MAX_RATE_LIMIT_WAIT_S;
    if (attempt < patience.readRetries && (limited || (read && response.status >= 500))) {
      await sleep(limited ? retryAfter * 1000 : 250 * 2 ** attempt);
      continue;
    }
    throw new GitlabApiError(
      response.status,
      messageOf(text),
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  }
};

const requesters = {
  patient: createRequesterFn((_service, options) => Promise.resolve(options), sender(PATIENT)),
  brief: createRequesterFn((_service, options) => Promise.resolve(options), sender(BRIEF)),
};

/** `brief`: one try of at most 5 s (see BRIEF); otherwise reads are retried and may take 30 s. */
export function gitlabClient(options: { apiUrl: string; token: string; brief?: boolean }): GitlabClient {
  const requesterFn = options.brief ? requesters.brief : requesters.patient;
  return new Gitlab({ host: gitlabHost(options.apiUrl), token: options.token, requesterFn });
}

/** GitLab access levels: 50 owner, 40 maintainer, 30 developer, 20 reporter, 10 guest. */
export const DEVELOPER_ACCESS = 30;

/**
 * The association svc gives a GitLab user on a project, from the members API (inherited
 * memberships included): 50 → owner, 40 and 30 → member, anything below or no membership → none.
 * GitLab's payloads carry no access level, so this is the only way to know who wrote an event.
 */
export function associationOfAccess(level: number | undefined): "owner" | "member" | "none" {
  if (level === undefined) return "none";
  if (level >= 50) return "owner";
  if (level >= DEVELOPER_ACCESS) return "member";
  return "none";
}

/** A user's access level on a project, undefined when they are not a member (GitLab answers 404). */
export async function accessLevel(
  client: GitlabClient,
  project: string,
  userId: number,
): Promise<number | undefined> {
  try {
    const member = await client.ProjectMembers.show(project, userId, { includeInherited: true });
    return typeof member.access_level === "number" ? member.access_level : undefined;
  } catch (error) {
    if (error instanceof GitlabApiError && error.status === 404) return undefined;
    throw error;
  }
}
