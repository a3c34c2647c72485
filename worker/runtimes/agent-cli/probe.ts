import type { AgentCliTarget } from "../../../shared/config/types.ts";
import { modelHttp } from "../../../shared/models/http.ts";
import type { ModelResponse } from "../openai.ts";
import { DEFAULT_BASE_URL as OPENAI_BASE_URL } from "./codex.ts";

const ANTHROPIC_BASE_URL = "https://api.anthropic.com";

/**
 * The throttled probe of a cooling agent CLI credential: the model list of the API the CLI talks
 * to, with the credential as the CLI sends it, asked by the worker itself (starting the CLI for
 * a probe would cost a model call). The same statuses decide as for a run: 2xx usable, 429
 * cooling, 401/403 dead.
 */
export async function probeAgentCli(target: AgentCliTarget, key: string): Promise<ModelResponse> {
  const codex = target.runtime === "codex";
  const base = (target.baseUrl ?? (codex ? OPENAI_BASE_URL : ANTHROPIC_BASE_URL)).replace(/\/+$/, "");
  const response = await modelHttp.get(codex ? `${base}/models` : `${base}/v1/models`, {
    headers: codex
      ? { authorization: `Bearer ${key}` }
      : { "x-api-key": key, "anthropic-version": "2023-06-01" },
    timeout: { request: Math.min(target.timeoutMs, 10_000) },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
  });
  let body: unknown = response.body;
  try {
    body = JSON.parse(response.body);
  } catch {
    // an error page, not JSON: the status decides alone
  }
  return { status: response.statusCode, headers: response.headers, body };
}
