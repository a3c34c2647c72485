import { Flags } from "@oclif/core";
import { configDirFrom } from "../shared/config/dir.ts";

/** `--dir`, spelled alike by every command that reads the configuration directory. */
export const dirFlag = Flags.string({
  description: "configuration directory (default: $SVC_CONFIG_DIR, else ./.svc)",
  helpValue: "<path>",
});

/** The configuration directory a command works on: `--dir`, else $SVC_CONFIG_DIR, else ./.svc. */
export function configDirOf(dir: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return dir ? configDirFrom({ SVC_CONFIG_DIR: dir }) : configDirFrom(env);
}

/**
 * The environment of a command that hands the configuration directory on (to a role it starts, or
 * to code that reads SVC_CONFIG_DIR itself): `env`, with SVC_CONFIG_DIR set to `--dir` when given.
 */
export function configEnvOf(
  dir: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  return dir ? { ...env, SVC_CONFIG_DIR: dir } : env;
}
