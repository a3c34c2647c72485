import { join } from "node:path";
import type pg from "pg";
import { readSecrets } from "../../db/secrets.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";

/**
 * Target credential values, resolved once at start-up: inline values come from the snapshot,
 * `secret_ref` values are decrypted from `svc.secrets` with the instance key. A missing stored
 * secret or key stops start-up, as the contract requires. Values live only here, never in a log.
 */
export class CredentialSecrets {
  readonly #values = new Map<string, string>();

  get(target: string, credential: string): string | undefined {
    return this.#values.get(`${target}\u0000${credential}`);
  }

  /** Every value held: what a run's stored artifacts are redacted of (worker/run/run-secrets.ts). */
  values(): string[] {
    return [...new Set(this.#values.values())];
  }

  static async resolve(
    config: Pick<ConfigSnapshot, "targets" | "dir">,
    db: pg.Pool,
    env: NodeJS.ProcessEnv,
  ): Promise<CredentialSecrets> {
    const secrets = new CredentialSecrets();
    const stored: { id: string; name: string }[] = [];
    for (const target of Object.values(config.targets)) {
      for (const credential of target.credentials) {
        const id = `${target.name}\u0000${credential.name}`;
        if (credential.secret.kind === "inline") secrets.#values.set(id, credential.secret.value);
        else stored.push({ id, name: credential.secret.name });
      }
    }
    if (stored.length === 0) return secrets;
    const key = await readInstanceKey(env.SVC_INSTANCE_KEY_FILE ?? join(config.dir, "instance.key"));
    const values = await readSecrets(db, key, [...new Set(stored.map((entry) => entry.name))]);
    const missing = stored.filter((entry) => !values.has(entry.name)).map((entry) => entry.name);
    if (missing.length) {
      throw new Error(
        `target credentials refer to stored secrets that do not exist: ${[...new Set(missing)].join(", ")}; store them with \`svc setup\` and restart`,
      );
    }
    for (const entry of stored) secrets.#values.set(entry.id, values.get(entry.name)!);
    return secrets;
  }
}
