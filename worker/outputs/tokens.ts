import { join } from "node:path";
import type pg from "pg";
import { readSecrets } from "../../db/secrets.ts";
import { codehostPrincipalId } from "../../shared/config/outputs.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";
import { PublishError } from "./attempt.ts";

/**
 * The identity a pipeline publishes as: `principal` → `principals.<binding>` →
 * `codehost.principals.<id>`, else the default `codehost.token`. Values are resolved when first
 * used (a stored one with the instance key) and never logged.
 */
export async function secretValue(
  source: SecretSource,
  pool: pg.Pool,
  config: Pick<ConfigSnapshot, "dir">,
): Promise<string> {
  if (source.kind === "inline") return source.value;
  const key = await readInstanceKey(process.env.SVC_INSTANCE_KEY_FILE ?? join(config.dir, "instance.key"));
  const value = (await readSecrets(pool, key, [source.name])).get(source.name);
  if (value === undefined) {
    throw new PublishError({
      kind: "final",
      status: "secret_missing",
      message: `the stored secret ${source.name} does not exist - store it with svc setup and restart`,
    });
  }
  return value;
}

export interface CodehostIdentity {
  /** `codehost.principal.<id>`, or `codehost.token` for the default identity */
  name: string;
  source: SecretSource;
}

export function codehostIdentity(config: ConfigSnapshot, pipeline: Pipeline): CodehostIdentity | undefined {
  const id = pipeline.principal ? codehostPrincipalId(pipeline.principals[pipeline.principal]) : undefined;
  if (id !== undefined) {
    const principal = config.codehost?.principals[id];
    return principal ? { name: `codehost.principal.${id}`, source: principal.token } : undefined;
  }
  return config.codehost?.token ? { name: "codehost.token", source: config.codehost.token } : undefined;
}
