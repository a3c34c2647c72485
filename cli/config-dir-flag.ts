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
