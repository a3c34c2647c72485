import { Args, Command, Flags } from "@oclif/core";
import { signingSecretRef } from "../../../shared/config/daemon/webhooks.ts";
import { configDirFrom } from "../../../shared/config/dir.ts";
import { SIGNING_SECRET_SHAPE, signingKey } from "../../../shared/config/signing-secret.ts";
import { configEnvOf, dirFlag } from "../../config-dir-flag.ts";
import { configuredSource, gitlabForm } from "../../gitlab-webhook-form.ts";
import { storeSecret } from "../../store-secret.ts";

const SOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export default class SetupWebhook extends Command {
  static override summary =
    "Store a webhook source's secret in the database, encrypted with the instance key; for a gitlab source, print GitLab's webhook form";
  static override description =
    "Reads the secret from the environment variable named by --secret-env (never from the command line, which " +
    "other users and shell history can see), encrypts it with AES-256-GCM under the instance key and stores it " +
    "as webhook/<name>. The instance key file must exist first (`svc setup instance-key`, or restore it). " +
    "Running processes do not see the new secret: set `secret_ref: webhook/<name>` on webhooks.sources.<name> " +
    "in daemon.yaml, then restart the daemon. With --signing it stores a GitLab webhook's signing token " +
    "(whsec_...) as webhook/<name>/signing-secret, for `signing_secret_ref` on a `verify: gitlab` source.\n\n" +
    "For a `verify: gitlab` source of daemon.yaml (or with --signing) it then prints what to fill in on GitLab's " +
    "webhook form (the project's or group's Settings → Webhooks): the URL, <server.public_url>/webhooks/<name>; " +
    "which secret goes into Secret token (and Signing token), named, never printed; the triggers to tick (Push " +
    "events, Tag push events, Comments, Merge request events); and Enable SSL verification. Without " +
    "--secret-env it only prints that form, storing nothing.";
  static override examples = [
    "GITHUB_WEBHOOK_SECRET=... <%= config.bin %> setup webhook github --secret-env GITHUB_WEBHOOK_SECRET",
    "SVC_DATABASE_URL=postgres://svc@db/svc <%= config.bin %> setup webhook deploy-hook --secret-env DEPLOY_TOKEN",
    {
      description: "Store a verify: gitlab source's secret token, then print GitLab's webhook form:",
      command:
        "GITLAB_WEBHOOK_SECRET=... <%= config.bin %> setup webhook gitlab --secret-env GITLAB_WEBHOOK_SECRET",
    },
    {
      description: "Store its signing token (whsec_...), for signing_secret_ref:",
      command:
        "GITLAB_SIGNING_TOKEN=whsec_... <%= config.bin %> setup webhook gitlab --signing --secret-env GITLAB_SIGNING_TOKEN",
    },
    {
      description: "Print GitLab's webhook form for a verify: gitlab source, storing nothing:",
      command: "<%= config.bin %> setup webhook gitlab",
    },
  ];
  static override args = {
    name: Args.string({
      description: "the webhook source name (the route /webhooks/<name>)",
      required: true,
    }),
  };
  static override flags = {
    "secret-env": Flags.string({
      description:
        "name of the environment variable that holds the secret (required, except to print a gitlab source's webhook form)",
      helpValue: "<ENV_NAME>",
    }),
    signing: Flags.boolean({
      description: "store a gitlab source's signing token (whsec_...) instead of its secret token",
      default: false,
    }),
    dir: dirFlag,
  };

  /** The message as written (oclif's error() rewraps it), then exit 1. */
  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SetupWebhook);
    const env = configEnvOf(flags.dir);
    const envName = flags["secret-env"];
    if (!SOURCE_NAME.test(args.name)) {
      this.fail(`"${args.name}" is not a webhook source name: use letters, digits, ".", "_" and "-"`);
    }
    const configured = await configuredSource(configDirFrom(env), args.name, env);
    const gitlab = flags.signing || configured.source?.verify === "gitlab";
    if (envName === undefined) {
      if (flags.signing)
        this.fail(
          "--signing stores a signing token: name the environment variable that holds it with --secret-env",
        );
      if (!gitlab)
        this.fail(
          `--secret-env is required: name the environment variable that holds the secret of ${args.name} ` +
            `(without it, only a "verify: gitlab" source's webhook form is printed, and webhooks.sources.${args.name} ` +
            `in daemon.yaml is ${configured.source ? `verify: ${configured.source.verify ?? "(none)"}` : "not there"})`,
        );
      this.log(gitlabForm(args.name, configured, undefined).join("\n"));
      return;
    }
    if (!ENV_NAME.test(envName)) {
      this.fail(`--secret-env takes the name of an environment variable, like GITHUB_WEBHOOK_SECRET`);
    }
    const value = env[envName];
    if (value === undefined || value === "") {
      this.fail(
        `the environment variable ${envName} is not set or is empty; export it with the secret, then run again`,
      );
    }
    if (flags.signing && !signingKey(value)) {
      this.fail(`${envName} is not ${SIGNING_SECRET_SHAPE}; nothing was stored`);
    }
    const name = flags.signing ? signingSecretRef(args.name) : `webhook/${args.name}`;
    const key = flags.signing ? "signing_secret_ref" : "secret_ref";
    const stored = await storeSecret(env, name, value);
    if (stored.failure !== undefined) this.fail(stored.failure);
    const { keyPath } = stored;
    this.log(`stored the secret ${name}, encrypted with the instance key ${keyPath}.`);
    this.log(
      `Next: set "${key}: ${name}" on webhooks.sources.${args.name} in daemon.yaml, then restart the daemon ` +
        "(svc daemon restart) - running processes keep the configuration and secrets they started with.",
    );
    if (gitlab)
      this.log(
        `\n${gitlabForm(args.name, configured, { envName, name, signing: flags.signing }).join("\n")}`,
      );
  }
}
