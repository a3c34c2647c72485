import { readFile } from "node:fs/promises";
import { Command, Flags } from "@oclif/core";
import { isRsaPem } from "../../../shared/config/codehost-app.ts";
import { configEnvOf, dirFlag } from "../../config-dir-flag.ts";
import { storeSecret } from "../../store-secret.ts";

const PRINCIPAL_ID = /^[A-Za-z0-9_.:-]+$/;

export default class SetupCodehostApp extends Command {
  static override summary =
    "Store a GitHub App's private key in the database, encrypted with the instance key";
  static override description =
    "Reads the App's PEM private key from --key-file (the .pem GitHub generated), checks that it is an RSA private " +
    "key, encrypts it under the instance key and stores it as codehost/app-private-key (with --principal <id>: " +
    "codehost/principal/<id>/app-private-key). Then set `secret_ref:` on codehost.app (or " +
    "codehost.principals.<id>.app) in daemon.yaml, run `svc doctor` and restart the daemon.";
  static override examples = [
    "<%= config.bin %> setup codehost-app --key-file ./svc-app.2026-11-27.private-key.pem",
    "<%= config.bin %> setup codehost-app --principal reviewer --key-file ./reviewer.pem",
  ];
  static override flags = {
    "key-file": Flags.string({
      description: "the App's .pem private key",
      helpValue: "<path>",
      required: true,
    }),
    principal: Flags.string({ description: "store it for codehost.principals.<id>.app", helpValue: "<id>" }),
    dir: dirFlag,
  };

  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(SetupCodehostApp);
    const env = configEnvOf(flags.dir);
    if (flags.principal !== undefined && !PRINCIPAL_ID.test(flags.principal))
      this.fail(`"${flags.principal}" is not a principal id: use letters, digits, ".", "_", ":" and "-"`);
    const name = flags.principal
      ? `codehost/principal/${flags.principal}/app-private-key`
      : "codehost/app-private-key";
    const pem = await readFile(flags["key-file"], "utf8").catch((error: NodeJS.ErrnoException) =>
      this.fail(
        `cannot read ${flags["key-file"]} (${error.code ?? error.message}); pass the .pem file GitHub generated`,
      ),
    );
    if (!isRsaPem(pem))
      this.fail(
        `${flags["key-file"]} is not an RSA private key in PEM form - generate one on the App's settings page (Private keys) and pass that .pem file; nothing was stored`,
      );
    const stored = await storeSecret(env, name, pem);
    if (stored.failure !== undefined) this.fail(stored.failure);
    const { keyPath } = stored;
    const where = flags.principal ? `codehost.principals.${flags.principal}.app` : "codehost.app";
    this.log(`stored the secret ${name}, encrypted with the instance key ${keyPath}.`);
    this.log(
      `Next: set "secret_ref: ${name}" (and "id: <App ID>") on ${where} in daemon.yaml, run svc doctor, then restart the daemon (svc daemon restart).`,
    );
  }
}
