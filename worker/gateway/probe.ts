import { tmpdir } from "node:os";
import type { Queryable } from "../../db/queryable.ts";
import type { Target } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Lease } from "./account.ts";
import { DEFAULT_BASE_URLS } from "./apis.ts";
import { ModelGateway } from "./gateway.ts";
import { tokensOf } from "./usage.ts";
import type { CredentialStates } from "./verdict.ts";

/**
 * One-token probes of targets' credentials through a model gateway of svc's own, started on
 * loopback for the probes alone (`svc doctor --deep`): the agent's side holds a gateway token, the
 * gateway adds the credential and forwards to the target's `base_url`, and its verdict on the
 * answer is the one runs get. It reads no invocation's usage and changes no credential's state.
 */
export type ModelTarget = Exclude<Target, { runtime: "command" }>;

/** the most one probe may wait for its answer */
const PROBE_TIMEOUT_MS = 30_000;
/** the prompt of the one-token request */
const PROMPT = "Reply with OK.";
/** what the gateway answers when it could not reach the model API (forward.ts) */
const UNREACHED = "svc's gateway could not reach";

const NO_USAGE = { query: async () => ({ rows: [] }) } as unknown as Queryable;
const NO_STATES: CredentialStates = { markDead: async () => {}, markCooling: async () => {} };

export interface KeyProber {
  probe(target: ModelTarget, credential: string, key: string): Promise<Answer>;
  /** why the gateway could not reach a target's model API, by target name */
  reasons: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

/** The model API's origin a target's requests go to. */
export function targetOrigin(target: ModelTarget): string {
  return target.baseUrl ?? DEFAULT_BASE_URLS[target.runtime === "claude-code" ? "anthropic" : "openai"];
}

export async function openKeyProber(): Promise<KeyProber> {
  const reasons = new Map<string, string>();
  const keep = (_message: string, fields?: Record<string, unknown>) => {
    if (fields?.event === "gateway.upstream_failed") reasons.set(String(fields.target), String(fields.error));
  };
  // quiet, but for why a target's model API could not be reached
  const logger: Logger = {
    error: () => {},
    warn: keep,
    info: () => {},
    debug: () => {},
    isLevelEnabled: () => false,
  };
  const gateway = new ModelGateway({ db: NO_USAGE, credentials: NO_STATES, logger });
  await gateway.start(0, "127.0.0.1", tmpdir());
  return {
    probe: (target, credential, key) => probe(gateway, target, credential, key),
    reasons,
    close: () => gateway.close(),
  };
}

export interface Answer {
  status: number;
  /** the API's error message, if it gave one */
  message?: string;
  refusal?: Lease["refusal"];
  /** the gateway's own 502: nothing answered at the target's base URL */
  unreached: boolean;
  /** input and output tokens the gateway read from the answer */
  tokens: number;
  /** the model API the request went to (targetOrigin) */
  origin: string;
}

/** One request for one token, as an agent makes it: a gateway token, to the gateway, which adds `key`. */
async function probe(
  gateway: ModelGateway,
  target: ModelTarget,
  credential: string,
  key: string,
): Promise<Answer> {
  const account = await gateway.account({
    invocationId: `doctor-${target.name}-${credential}`,
    taskId: "doctor",
    budget: { requests: 1 },
    onToken: () => {},
  });
  let status = 0;
  let text = "";
  const lease = account.lease(target, credential, key);
  try {
    const base = gateway.clientUrl(lease);
    const [url, headers, body] =
      target.runtime === "claude-code"
        ? [
            `${base}/v1/messages`,
            { "x-api-key": lease.token, "anthropic-version": "2023-06-01" },
            { model: target.model, max_tokens: 1, messages: [{ role: "user", content: PROMPT }] },
          ]
        : target.runtime === "codex"
          ? [
              `${base}/responses`,
              { authorization: `Bearer ${lease.token}` },
              { model: target.model, input: PROMPT, max_output_tokens: 16, store: false },
            ]
          : [
              `${base}/chat/completions`,
              { authorization: `Bearer ${lease.token}` },
              { model: target.model, max_tokens: 1, messages: [{ role: "user", content: PROMPT }] },
            ];
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(Math.min(target.timeoutMs, PROBE_TIMEOUT_MS)),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      return {
        status: 0,
        message: (error as Error).message,
        unreached: true,
        tokens: 0,
        origin: targetOrigin(target),
      };
    }
  } finally {
    // the gateway's verdict on the credential is written before the account closes
    await account.close();
  }
  const message = errorMessage(text);
  return {
    status,
    ...(message ? { message } : {}),
    ...(lease.refusal ? { refusal: lease.refusal } : {}),
    unreached: status === 502 && (message ?? "").includes(UNREACHED),
    tokens: tokensOf(account.spend),
    origin: targetOrigin(target),
  };
}

/** The error an API answered with: `{error: {type, message}}` (Anthropic) or `{error: {message, code}}` (OpenAI). */
function errorMessage(text: string): string | undefined {
  try {
    const error = (JSON.parse(text) as { error?: { type?: string; code?: string; message?: string } }).error;
    if (!error) return undefined;
    const kind = error.type ?? error.code;
    return [kind, error.message].filter(Boolean).join(": ").slice(0, 300) || undefined;
  } catch {
    return undefined;
  }
}
