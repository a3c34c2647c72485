import { appendFile } from "node:fs/promises";
import got from "got";
import type { OpenAiTarget } from "../../shared/config/types.ts";
import { diagnostic } from "../../shared/diagnostics.ts";
import { classifyResponse } from "../credentials/classify.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";
import type { Prompt } from "../prompt.ts";
import { lastJsonObject } from "../result-check.ts";
import type { AgentOutcome } from "./outcome.ts";

export interface OpenAiRunInput {
  target: OpenAiTarget;
  prompt: Prompt;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  transcriptFile: string;
  signal: AbortSignal;
}

export interface ModelResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

function endpoint(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/${path}`;
}

/** One chat-completions request; the key goes into the header and nowhere else. */
export async function chatCompletion(
  target: OpenAiTarget,
  key: string,
  prompt: Prompt,
  signal: AbortSignal,
): Promise<ModelResponse> {
  const messages = [
    ...(prompt.system ? [{ role: "system", content: prompt.system }] : []),
    { role: "user", content: prompt.user },
  ];
  const response = await got.post(endpoint(target.baseUrl, "chat/completions"), {
    json: { model: target.model, messages },
    headers: { authorization: `Bearer ${key}` },
    timeout: { request: target.timeoutMs },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
    signal,
  });
  return { status: response.statusCode, headers: response.headers, body: parseBody(response.body) };
}

/** The cheapest authenticated request an OpenAI-compatible API answers: the model list. */
export async function probeRequest(target: OpenAiTarget, key: string): Promise<ModelResponse> {
  const response = await got.get(endpoint(target.baseUrl, "models"), {
    headers: { authorization: `Bearer ${key}` },
    timeout: { request: Math.min(target.timeoutMs, 10_000) },
    retry: { limit: 0 },
    throwHttpErrors: false,
    responseType: "text",
  });
  return { status: response.statusCode, headers: response.headers, body: parseBody(response.body) };
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function content(body: unknown): string | undefined {
  const choices = (body as { choices?: { message?: { content?: unknown } }[] } | null)?.choices;
  const value = choices?.[0]?.message?.content;
  return typeof value === "string" ? value : undefined;
}

/**
 * The `openai` runtime with credential failover: the target's credentials in order, skipping the
 * cooling and the dead; a 401/403/revoked/expired answer kills the credential and a 429 parks it,
 * and the next one is tried. No usable credential left means the target is unavailable.
 */
export async function runOpenAiAgent(input: OpenAiRunInput): Promise<AgentOutcome> {
  const { target, cooldowns } = input;
  const log = (line: string) => appendFile(input.transcriptFile, `${line}\n`);
  await log(`# request: model ${target.model} at ${target.baseUrl}`);
  await log(JSON.stringify({ system: input.prompt.system, user: input.prompt.user }));
  for (const credential of target.credentials) {
    if (!cooldowns.isUsable(target.name, credential.name)) continue;
    const key = input.secrets.get(target.name, credential.name);
    if (key === undefined) continue;
    let response: ModelResponse;
    try {
      response = await chatCompletion(target, key, input.prompt, input.signal);
    } catch (error) {
      if (input.signal.aborted) return { kind: "aborted" };
      const code = (error as { code?: string }).code;
      if (code === "ETIMEDOUT" || (error as Error).name === "TimeoutError") {
        await log(`# timed out after ${target.timeoutMs} ms`);
        return {
          kind: "failed",
          diagnostic: diagnostic(
            "agent_timeout",
            `the model API of target ${target.name} did not answer within ${target.timeoutMs} ms`,
            { target: target.name, metadata: { timeoutMs: target.timeoutMs } },
          ),
        };
      }
      await log(`# request failed: ${code ?? (error as Error).message}`);
      return {
        kind: "unavailable",
        reason: `request failed (${code ?? "error"})`,
        diagnostic: diagnostic(
          "agent_failed",
          `the model API of target ${target.name} could not be reached (${code ?? "error"})`,
          {
            target: target.name,
          },
        ),
      };
    }
    await log(`# response ${response.status} (credential ${credential.name})`);
    await log(typeof response.body === "string" ? response.body : JSON.stringify(response.body));
    const verdict = classifyResponse(response.status, response.headers, response.body);
    if (verdict.kind === "dead") {
      await cooldowns.markDead(target.name, credential.name, verdict.reason);
      continue;
    }
    if (verdict.kind === "cooling") {
      await cooldowns.markCooling(target.name, credential.name, verdict.until, verdict.reason);
      continue;
    }
    if (verdict.kind === "other") {
      return {
        kind: "unavailable",
        reason: verdict.reason,
        diagnostic: diagnostic(
          "agent_failed",
          `the model API of target ${target.name} answered ${verdict.reason}`,
          {
            target: target.name,
            metadata: { status: response.status },
          },
        ),
      };
    }
    const text = content(response.body);
    const result = text === undefined ? undefined : lastJsonObject(text);
    if (!result) {
      return {
        kind: "failed",
        diagnostic: diagnostic(
          "result_invalid",
          `the model on target ${target.name} answered no JSON object`,
          {
            target: target.name,
            path: "/",
          },
        ),
      };
    }
    return { kind: "result", result };
  }
  return { kind: "unavailable", reason: `no usable credential on target ${target.name}` };
}
