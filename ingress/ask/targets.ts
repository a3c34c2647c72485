import { spawn } from "node:child_process";
import { isAbsolute, resolve } from "node:path";
import type pg from "pg";
import { listCooldowns, markCooling, markDead } from "../../db/credential-cooldowns.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { CommandTarget, OpenAiTarget, Target } from "../../shared/config/types.ts";
import { classifyResponse } from "../../shared/credentials/classify.ts";
import type { Logger } from "../../shared/logger.ts";
import { type ChatMessage, chatCompletion, isTimeout, replyText } from "../../shared/models/chat.ts";
import type { EndpointAdmission, EndpointCooldowns } from "../../shared/models/endpoint-cooldowns.ts";

export interface TargetDeps {
  pool: pg.Pool;
  logger: Logger;
  configDir: string;
  resolveSecret: (source: SecretSource) => string;
  /** which targets this ingress found unreachable: skipped while they cool down */
  endpoints: EndpointCooldowns;
}

export type TargetAnswer = { ok: true; answer: string } | { ok: false; reason: string };

/** Asks one target; the reason of a failure says what to fix and never holds a secret. */
export function askTarget(target: Target, messages: ChatMessage[], deps: TargetDeps): Promise<TargetAnswer> {
  if (target.runtime === "openai") return askOpenAi(target, messages, deps);
  if (target.runtime === "command") return askCommand(target, messages, deps);
  // the loader refuses agent CLI targets in ask.targets; this keeps a stray one from running
  return Promise.resolve({
    ok: false,
    reason: `target ${target.name} runs ${target.runtime}, which does not answer /ask`,
  });
}

/**
 * The worker's credential rules, on the shared table: dead and still-cooling credentials are
 * skipped; a 401/403/revoked/expired answer marks the credential dead for every process (the
 * row in credential_cooldowns), a 429 parks it until Retry-After; 5xx, other statuses and
 * time-outs move on to the next target. A target that gave no answer at all (a network error, a
 * time-out) is skipped by the next questions while it cools down (shared/models/endpoint-cooldowns.ts).
 */
async function askOpenAi(
  target: OpenAiTarget,
  messages: ChatMessage[],
  deps: TargetDeps,
): Promise<TargetAnswer> {
  const rows = (await listCooldowns(deps.pool)).filter((row) => row.target === target.name);
  const now = Date.now();
  const blocked = new Set(
    rows
      .filter((row) => row.state === "dead" || (row.until !== null && row.until.getTime() > now))
      .map((row) => row.credential),
  );
  const credentials = target.credentials.length ? target.credentials : [undefined];
  const skipped: string[] = [];
  // asked at the first call, so that a target whose credentials are all skipped probes nothing
  let admission: Extract<EndpointAdmission, { kind: "call" }> | undefined;
  for (const credential of credentials) {
    if (credential && blocked.has(credential.name)) {
      skipped.push(`${credential.name} is ${rows.find((r) => r.credential === credential.name)?.state}`);
      continue;
    }
    let key: string | undefined;
    try {
      key = credential ? deps.resolveSecret(credential.secret) : undefined;
    } catch {
      skipped.push(`${credential?.name} is a stored secret this ingress did not load`);
      continue;
    }
    if (!admission) {
      const admitted = deps.endpoints.admit(target.name);
      if (admitted.kind === "skip") return { ok: false, reason: `skipped: ${admitted.reason}` };
      admission = admitted;
    }
    let response: Awaited<ReturnType<typeof chatCompletion>>;
    try {
      response = await chatCompletion({
        baseUrl: target.baseUrl,
        model: target.model,
        key,
        messages,
        timeoutMs: target.timeoutMs,
      });
    } catch (error) {
      const code = isTimeout(error) ? "timed out" : ((error as { code?: string }).code ?? "error");
      const cooling = admission.down(code);
      const skip = cooling ? `; skipped for ${cooling.coolingMs / 1000} s` : "";
      if (isTimeout(error)) return { ok: false, reason: `timed out after ${target.timeoutMs} ms${skip}` };
      return { ok: false, reason: `unreachable (${code})${skip}` };
    }
    admission.up();
    const verdict = classifyResponse(response.status, response.headers, response.body);
    if (verdict.kind === "ok") {
      const text = replyText(response.body);
      if (text?.trim()) return { ok: true, answer: text.trim() };
      return { ok: false, reason: "answered without a message" };
    }
    if (verdict.kind === "other") return { ok: false, reason: `answered ${verdict.reason}` };
    const name = credential?.name ?? "(none)";
    if (verdict.kind === "dead") {
      await markDead(deps.pool, { target: target.name, credential: name, reason: verdict.reason });
      deps.logger.error(
        `credential dead: ${target.name}/${name} (${verdict.reason}); replace the secret, delete its row from credential_cooldowns and restart`,
        { event: "credential.dead", target: target.name, credential: name, reason: verdict.reason },
      );
      skipped.push(`${name} is dead (${verdict.reason})`);
    } else {
      await markCooling(deps.pool, {
        target: target.name,
        credential: name,
        until: verdict.until,
        reason: verdict.reason,
      });
      deps.logger.warn(
        `credential cooling: ${target.name}/${name} until ${verdict.until.toISOString()} (${verdict.reason})`,
        {
          event: "credential.cooling",
          target: target.name,
          credential: name,
          until: verdict.until.toISOString(),
          reason: verdict.reason,
        },
      );
      skipped.push(`${name} is cooling (${verdict.reason})`);
    }
  }
  return { ok: false, reason: `no usable credential: ${skipped.join("; ")}` };
}

/**
 * A `command` target answers like an agent run: the prompt on stdin, in the configuration
 * directory; the answer is the `answer` of the last JSON object it prints, else all of stdout.
 */
function askCommand(target: CommandTarget, messages: ChatMessage[], deps: TargetDeps): Promise<TargetAnswer> {
  const [executable, ...args] = target.command;
  const file =
    executable && !isAbsolute(executable) && executable.includes("/")
      ? resolve(deps.configDir, executable)
      : (executable ?? "");
  return new Promise((done) => {
    const child = spawn(file, args, {
      cwd: deps.configDir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/" },
      stdio: ["pipe", "pipe", "ignore"],
    });
    const out: Buffer[] = [];
    let failed: string | undefined;
    const timer = setTimeout(() => {
      failed = `timed out after ${target.timeoutMs} ms`;
      child.kill("SIGKILL");
    }, target.timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.on("error", (error: NodeJS.ErrnoException) => {
      failed = `cannot start ${executable} (${error.code ?? error.message})`;
    });
    child.stdin.on("error", () => {}); // an agent that ignores stdin is judged by its exit code
    child.stdin.end(`${messages.map((m) => m.content).join("\n\n")}\n`);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (failed) return done({ ok: false, reason: failed });
      if (code !== 0) return done({ ok: false, reason: `exited with ${code}` });
      const text = Buffer.concat(out).toString("utf8").trim();
      const answer = lastAnswer(text) ?? text;
      done(answer ? { ok: true, answer } : { ok: false, reason: "printed nothing" });
    });
  });
}

function lastAnswer(text: string): string | undefined {
  for (const line of text.split("\n").reverse()) {
    if (!line.trim().startsWith("{")) continue;
    try {
      const value = JSON.parse(line) as { answer?: unknown };
      if (typeof value.answer === "string") return value.answer;
    } catch {
      // not JSON: the text itself is the answer
    }
  }
  return undefined;
}
