import { isAbsolute, join, resolve } from "node:path";

/** Absolute path of the configuration directory: `SVC_CONFIG_DIR`, or `./.svc` of the working directory. */
export function configDirFrom(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const configured = env.SVC_CONFIG_DIR?.trim();
  return resolve(cwd, configured ? configured : ".svc");
}

/** The instance key that encrypts stored secrets: `SVC_INSTANCE_KEY_FILE`, or `<config dir>/instance.key`. */
export function instanceKeyPath(configDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.SVC_INSTANCE_KEY_FILE?.trim();
  if (!configured) return join(configDir, "instance.key");
  return isAbsolute(configured) ? configured : resolve(configured);
}
