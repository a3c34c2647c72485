import type { Command } from "@oclif/core";
import type Docker from "dockerode";
import { createPool, resolveDatabase } from "../../db/connect.ts";
import { readSecrets } from "../../db/secrets.ts";
import { instanceKeyPath } from "../../shared/config/dir.ts";
import { formatProblems } from "../../shared/config/format.ts";
import { loadConfig } from "../../shared/config/load.ts";
import type { SandboxSettings } from "../../shared/config/sandbox-types.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { engineUnreachableMessage, isEngineUnreachable, openEngine } from "../../shared/sandbox/engine.ts";
import { sandboxSettings } from "../../shared/sandbox/settings.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";

/** The configuration an image command works from, or exit 1 with every problem of it. */
export async function imageConfig(
  command: Command,
  dir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ config: Readonly<ConfigSnapshot>; settings: SandboxSettings; docker: Docker }> {
  const loaded = await loadConfig({ dir, env });
  if (!loaded.ok) {
    process.stderr.write(`${formatProblems(loaded.problems)}\n`);
    return command.exit(1);
  }
  const settings = sandboxSettings(loaded.config);
  return { config: loaded.config, settings, docker: openEngine(settings.engine) };
}

/** Runs `work` against the engine; an engine that does not answer exits 1 with the fix. */
export async function withEngine<T>(
  command: Command,
  settings: SandboxSettings,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!isEngineUnreachable(error)) throw error;
    process.stderr.write(`svc image: ${engineUnreachableMessage(settings.engine, error)}\n`);
    return command.exit(1);
  }
}

/**
 * The registry's credentials from `sandboxes.registry_auth`: the password inline (after `${ENV}`
 * substitution) or the stored secret `registry/password`, decrypted with the instance key.
 */
export async function registryCredentials(
  settings: SandboxSettings,
  dir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ username: string; password: string } | undefined> {
  const auth = settings.registryAuth;
  if (!auth) return undefined;
  if (auth.secret.kind === "inline") return { username: auth.username, password: auth.secret.value };
  const name = auth.secret.name;
  const key = await readInstanceKey(instanceKeyPath(dir, env));
  const database = await resolveDatabase(dir, env);
  const pool = createPool(database.url, { max: 1, applicationName: "svc-image" });
  try {
    const password = (await readSecrets(pool, key, [name])).get(name);
    if (password === undefined)
      throw new Error(
        `sandboxes.registry_auth refers to the stored secret ${name}, which the database does not hold - store the registry password as ${name}, then run again`,
      );
    return { username: auth.username, password };
  } finally {
    await pool.end();
  }
}
