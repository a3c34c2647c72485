import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { probeAgentCli } from "../runtimes/agent-cli/probe.ts";
import { probeRequest } from "../runtimes/openai.ts";
import { classifyResponse } from "./classify.ts";
import type { CredentialCooldowns } from "./cooldowns.ts";
import type { CredentialSecrets } from "./secrets.ts";

/**
 * The throttled probe of cooling lanes: once a cooling credential's `until` has passed, one cheap
 * request per `intervalMs` asks whether the cap lifted. Success makes it usable (the lane resumes);
 * another 429 parks it again; an authentication failure kills it. Dead credentials are never probed.
 */
export interface ProbeDeps {
  config: Pick<ConfigSnapshot, "targets">;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
  logger: Logger;
  intervalMs: number;
}

export class CoolingProbe {
  readonly #lastProbe = new Map<string, number>();
  readonly #inFlight = new Set<string>();
  readonly #deps: ProbeDeps;

  constructor(deps: ProbeDeps) {
    this.#deps = deps;
  }

  async tick(now = Date.now()): Promise<void> {
    const { cooldowns, config, secrets, logger, intervalMs } = this.#deps;
    const due = cooldowns.dueForProbe(new Date(now));
    await Promise.all(
      due.map(async ({ target: targetName, credential }) => {
        const id = `${targetName}\u0000${credential}`;
        if (this.#inFlight.has(id) || now - (this.#lastProbe.get(id) ?? 0) < intervalMs) return;
        const target = config.targets[targetName];
        const key = secrets.get(targetName, credential);
        if (!target || target.runtime === "command" || key === undefined) return;
        this.#inFlight.add(id);
        this.#lastProbe.set(id, now);
        try {
          const response =
            target.runtime === "openai" ? await probeRequest(target, key) : await probeAgentCli(target, key);
          const verdict = classifyResponse(response.status, response.headers, response.body);
          logger.info("cooling credential probed", {
            event: "credential.probe",
            target: targetName,
            credential,
            status: response.status,
          });
          if (verdict.kind === "ok") await cooldowns.markUsable(targetName, credential);
          else if (verdict.kind === "cooling")
            await cooldowns.markCooling(targetName, credential, verdict.until, verdict.reason);
          else if (verdict.kind === "dead") await cooldowns.markDead(targetName, credential, verdict.reason);
        } catch (error) {
          logger.warn("cooling credential probe failed", {
            event: "credential.probe_failed",
            target: targetName,
            credential,
            error: (error as { code?: string }).code ?? (error as Error).message,
          });
        } finally {
          this.#inFlight.delete(id);
        }
      }),
    );
  }
}
