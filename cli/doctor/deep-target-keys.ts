import type { DoctorCode } from "../../shared/config/codes.ts";
import { ConfigFile, formatPath } from "../../shared/config/source.ts";
import type { ConfigProblem, Target } from "../../shared/config/types.ts";
import { keyOf } from "./codehost-app.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck } from "./types.ts";

type ModelTarget = Exclude<Target, { runtime: "command" }>;

/** keys, and the masked keys some APIs quote back (`sk-proj-****abcd`), kept out of messages */
const KEY_LIKE = /\b(?:sk|rk|pk)-[A-Za-z0-9_*-]{8,}/g;

/**
 * `svc doctor --deep`, the model's link: each credential of each `openai`, `claude-code` and
 * `codex` target makes one request through a model gateway of svc's own (worker/gateway/, started
 * here on loopback), as an agent of a run makes it: the agent holds a gateway token, the gateway
 * adds the credential and forwards to the target's `base_url`, and its verdict on the answer is
 * the one runs get. The request asks for one token (`max_tokens: 1`; Codex's Responses API takes
 * 16 at least) under a budget of one model request. A credential the API refuses (401, 403, a
 * revoked or expired key) is `target_key_refused`, naming the target, the credential and where
 * its key comes from; an answer that accepts the key but not the request, or no answer, is
 * `target_request_failed`. Keys never reach a message.
 */
export const targetKeysCheck: DoctorCheck = {
  name: "target-keys",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const targets = Object.values(loaded.config.targets).filter(
      (target): target is ModelTarget => target.runtime !== "command",
    );
    if (targets.length === 0)
      return {
        status: "skipped",
        detail: "no openai, claude-code or codex target (a command target's key is its own business)",
        problems: [],
      };
    if (!ctx.keyProber)
      return { status: "skipped", detail: "no model gateway to probe the keys with", problems: [] };
    const prober = await ctx.keyProber();
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const details: string[] = [];
    let asked = 0;
    try {
      for (const target of targets) {
        for (const [index, credential] of target.credentials.entries()) {
          const name = `${target.name}/${credential.name}`;
          const path = ["targets", target.name, "credentials", index];
          let key: string;
          try {
            key = await keyOf(ctx, credential.secret);
          } catch (error) {
            // a stored secret without the database or the instance key: those checks say why
            details.push(`${name} not checked (${(error as Error).message.split("\n")[0]})`);
            continue;
          }
          asked += 1;
          const answer = await prober.probe(target, credential.name, key);
          const scrub = (text: string) => text.split(key).join("[redacted]").replace(KEY_LIKE, "[redacted]");
          const origin = answer.origin;
          const said = `HTTP ${answer.status}${answer.message ? ` (${scrub(answer.message)})` : ""}`;
          const from =
            credential.secret.kind === "stored"
              ? `the stored secret ${credential.secret.name}: store a key the API accepts under that name`
              : `its secret in daemon.yaml (or the variable it substitutes): set a key the API accepts`;
          const report = (code: DoctorCode, severity: "error" | "warning", text: string) =>
            file.report(path, code, `"${formatPath(path)}" (${credential.name}): ${text}`, severity);
          if (answer.refusal?.kind === "dead") {
            report(
              "target_key_refused",
              "error",
              `the model API of target ${target.name} at ${origin} refused the key on a one-token request through svc's gateway: ${said}; runs mark it dead and fail over - replace it: ${from}, then restart the daemon`,
            );
            details.push(`${name} refused (${answer.status})`);
          } else if (answer.status >= 200 && answer.status < 300) {
            details.push(`${name} accepted (${answer.tokens} tokens)`);
          } else if (answer.unreached) {
            report(
              "target_request_failed",
              "error",
              `svc's gateway could not reach the model API of target ${target.name} at ${origin} (${scrub(prober.reasons.get(target.name) ?? answer.message ?? "no answer")}) - check that this host reaches it (DNS, proxy, firewall) and "targets.${target.name}.base_url"`,
            );
            details.push(`${name} unreachable`);
          } else {
            const cooling = answer.refusal?.kind === "cooling";
            report(
              "target_request_failed",
              cooling ? "warning" : "error",
              cooling
                ? `the model API of target ${target.name} at ${origin} took the key but refused the request for now: ${said} - runs wait for it to cool down; check the account's rate limits and quota`
                : `the model API of target ${target.name} at ${origin} took the key but refused a one-token request for model ${target.model}: ${said} - check "targets.${target.name}.model" and "targets.${target.name}.base_url"`,
            );
            details.push(`${name} ${cooling ? "cooling" : "refused the request"} (${answer.status})`);
          }
        }
      }
    } finally {
      await prober.close();
    }
    const status: CheckStatus = problems.some((p) => p.severity === "error")
      ? "error"
      : problems.length
        ? "warning"
        : asked === 0
          ? "skipped"
          : "ok";
    return { status, detail: details.join(", "), problems };
  },
};
