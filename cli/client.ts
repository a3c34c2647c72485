import { readCredential } from "./credentials.ts";

/** Where the CLI finds the daemon: `SVC_DAEMON_URL`, else the local default. */
export const DEFAULT_DAEMON_URL = "http://127.0.0.1:7420";

export function daemonUrl(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.SVC_DAEMON_URL?.trim();
  const url = configured || DEFAULT_DAEMON_URL;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("scheme");
  } catch {
    throw new Error(`SVC_DAEMON_URL must be an http(s) URL such as ${DEFAULT_DAEMON_URL}`);
  }
  return url.replace(/\/+$/, "");
}

export class DaemonUnreachableError extends Error {}

/** A non-2xx answer of the daemon, with its `{ error: { code, message, … } }` body. */
export class DaemonError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(status: number, code: string, message: string, details: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

const TIMEOUT_MS = 15_000;

/** The daemon API over HTTP; the CLI never imports the ingress. */
export class DaemonClient {
  readonly url: string;
  readonly #token: string | undefined;

  constructor(url: string, token?: string) {
    this.url = url;
    this.#token = token;
  }

  get<T>(path: string, query: Record<string, string | number | boolean | undefined> = {}): Promise<T> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const search = params.size ? `?${params}` : "";
    return this.request<T>("GET", path + search);
  }

  post<T>(path: string, body: unknown = {}, timeoutMs = TIMEOUT_MS): Promise<T> {
    return this.request<T>("POST", path, body, timeoutMs);
  }

  async request<T>(method: string, path: string, body?: unknown, timeoutMs = TIMEOUT_MS): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.url + path, {
        method,
        headers: {
          accept: "application/json",
          ...(this.#token ? { authorization: `Bearer ${this.#token}` } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const inner = (error as { cause?: { code?: string; message?: string } }).cause;
      const cause = inner?.code ?? inner?.message ?? (error as Error).name;
      throw new DaemonUnreachableError(
        `the daemon at ${this.url} is unreachable (${cause}); start it with \`svc daemon start\` or set SVC_DAEMON_URL`,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new DaemonError(
        response.status,
        "invalid_response",
        `the daemon answered ${response.status} with non-JSON`,
        {},
      );
    }
    if (!response.ok) {
      const error = (parsed as { error?: Record<string, unknown> } | undefined)?.error ?? {};
      const { code, message, ...details } = error;
      let text = typeof message === "string" ? message : `HTTP ${response.status}`;
      if (response.status === 401) text += ". Run `svc auth setup` to store a token for this daemon";
      throw new DaemonError(response.status, typeof code === "string" ? code : "error", text, details);
    }
    return parsed as T;
  }
}

/** A client for the daemon at SVC_DAEMON_URL with the token `svc auth setup` stored for it, if any. */
export async function connectDaemon(env: NodeJS.ProcessEnv = process.env): Promise<DaemonClient> {
  const url = daemonUrl(env);
  const credential = await readCredential(url, env);
  return new DaemonClient(url, credential?.token);
}
