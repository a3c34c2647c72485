import { Command } from "@oclif/core";
import { configDirFrom, instanceKeyPath } from "../../../shared/config/dir.ts";
import { createInstanceKey, InstanceKeyError } from "../../../shared/secrets/instance-key.ts";
import { configEnvOf, dirFlag } from "../../config-dir-flag.ts";

export default class SetupInstanceKey extends Command {
  static override summary = "Create the instance key that encrypts stored secrets";
  static override description =
    "Writes 32 random bytes (base64, one line) to SVC_INSTANCE_KEY_FILE, by default <config dir>/instance.key, " +
    "with mode 0600. Refuses to overwrite an existing key: secrets stored under it would become unreadable. " +
    "Back the file up; without it the stored secrets cannot be recovered. Then store secrets with " +
    "`svc setup webhook <name> --secret-env <ENV_NAME>`.";
  static override examples = [
    "<%= config.bin %> setup instance-key",
    "SVC_INSTANCE_KEY_FILE=/etc/svc/instance.key <%= config.bin %> setup instance-key",
  ];
  static override flags = {
    dir: dirFlag,
  };

  /** The message as written (oclif's error() rewraps it), then exit 1. */
  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(SetupInstanceKey);
    const env = configEnvOf(flags.dir);
    const path = instanceKeyPath(configDirFrom(env), env);
    try {
      await createInstanceKey(path);
    } catch (error) {
      if (error instanceof InstanceKeyError) this.fail(error.message);
      throw error;
    }
    this.log(
      `created the instance key ${path} (mode 0600); back it up - stored secrets cannot be read without it`,
    );
  }
}
