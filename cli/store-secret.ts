import { createPool, redactUrl, resolveDatabase } from "../db/connect.ts";
import { migrate } from "../db/migrate.ts";
import { putSecret } from "../db/secrets.ts";
import { configDirFrom, instanceKeyPath } from "../shared/config/dir.ts";
import { InstanceKeyError, readInstanceKey } from "../shared/secrets/instance-key.ts";

/**
 * Stores one secret in the configuration's database, sealed with its instance key (`svc setup
 * webhook`, `svc setup codehost-app`). A key that cannot be read or a database that refuses comes
 * back as the message to print, naming the secret and (redacted) the database; nothing is stored.
 */
export async function storeSecret(
  env: NodeJS.ProcessEnv,
  name: string,
  value: string,
): Promise<{ keyPath: string; failure?: undefined } | { failure: string }> {
  const configDir = configDirFrom(env);
  const keyPath = instanceKeyPath(configDir, env);
  let key: Buffer;
  try {
    key = await readInstanceKey(keyPath);
  } catch (error) {
    if (error instanceof InstanceKeyError) return { failure: `cannot store ${name}: ${error.message}` };
    throw error;
  }
  const database = await resolveDatabase(configDir, env);
  const pool = createPool(database.url, { max: 1, applicationName: "svc-setup" });
  try {
    await migrate(pool);
    await putSecret(pool, key, name, value);
    return { keyPath };
  } catch (error) {
    return {
      failure: `cannot store ${name} in the database at ${redactUrl(database.url)}: ${(error as Error).message}`,
    };
  } finally {
    await pool.end();
  }
}
