import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { Args, Command, Flags } from "@oclif/core";
import { configDirFrom, instanceKeyPath } from "../../../shared/config/dir.ts";
import { SIGNING_SECRET_SHAPE, signingKey } from "../../../shared/config/signing-secret.ts";
import { InstanceKeyError, readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { configEnvOf, dirFlag } from "../../config-dir-flag.ts";
import { storeSecret } from "../../store-secret.ts";

// a target's, source's, token's or bot's name, as the loader takes it (shared/config/daemon/read-helpers.ts)
const PART = "[A-Za-z0-9][A-Za-z0-9._-]*";
// a code-host principal id (shared/config/outputs.ts)
const PRINCIPAL = "[A-Za-z0-9_.:-]+";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface Shape {
  /** the name as the help and the refusal show it */
  shape: string;
  pattern: RegExp;
  /** the key of daemon.yaml that names the secret: secret_ref, token_ref or signing_secret_ref */
  key: string;
  /** where that key goes, from the name's parts */
  where: (parts: string[]) => string;
  /** what the value must be, when the loader or the ingress checks it; undefined when it fits */
  check?: (value: string) => string | undefined;
  /** names another command stores, with the checks it makes */
  storedBy?: (parts: string[]) => string;
}

/** Every stored-secret name a `secret_ref` (or `token_ref`, `signing_secret_ref`) of daemon.yaml takes. */
const SHAPES: Shape[] = [
  {
    shape: "target/<target>/<credential>",
    pattern: new RegExp(`^target/(${PART})/(${PART})$`),
    key: "secret_ref",
    where: ([target, credential]) => `the credential "${credential}" of targets.${target}.credentials`,
  },
  {
    shape: "webhook/<source>/signing-secret",
    pattern: new RegExp(`^webhook/(${PART})/signing-secret$`),
    key: "signing_secret_ref",
    where: ([source]) => `webhooks.sources.${source}`,
    check: (value) => (signingKey(value) ? undefined : `the value is not ${SIGNING_SECRET_SHAPE}`),
  },
  {
    shape: "webhook/<source>",
    pattern: new RegExp(`^webhook/(${PART})$`),
    key: "secret_ref",
    where: ([source]) => `webhooks.sources.${source}`,
  },
  {
    shape: "token/<name>",
    pattern: new RegExp(`^token/(${PART})$`),
    key: "secret_ref",
    where: ([name]) => `auth.tokens.${name}`,
  },
  {
    shape: "chat/<bot>",
    pattern: new RegExp(`^chat/(${PART})$`),
    key: "token_ref",
    where: ([bot]) => `channels.chat.bots.${bot}`,
  },
  { shape: "codehost/default", pattern: /^codehost\/default$/, key: "token_ref", where: () => "codehost" },
  {
    shape: "codehost/principal/<id>",
    pattern: new RegExp(`^codehost/principal/(${PRINCIPAL})$`),
    key: "token_ref",
    where: ([id]) => `codehost.principals.${id}`,
  },
  {
    shape: "codehost/app-private-key",
    pattern: /^codehost\/app-private-key$/,
    key: "secret_ref",
    where: () => "codehost.app",
    storedBy: () => "svc setup codehost-app --key-file <app.pem>",
  },
  {
    shape: "codehost/principal/<id>/app-private-key",
    pattern: new RegExp(`^codehost/principal/(${PRINCIPAL})/app-private-key$`),
    key: "secret_ref",
    where: ([id]) => `codehost.principals.${id}.app`,
    storedBy: ([id]) => `svc setup codehost-app --principal ${id} --key-file <app.pem>`,
  },
  {
    shape: "registry/password",
    pattern: /^registry\/password$/,
    key: "secret_ref",
    where: () => "sandboxes.registry_auth",
  },
  { shape: "metrics/token", pattern: /^metrics\/token$/, key: "token_ref", where: () => "metrics" },
  { shape: "broker/secret", pattern: /^broker\/secret$/, key: "secret_ref", where: () => "auth.broker" },
];

function shapeOf(name: string): { shape: Shape; parts: string[] } | undefined {
  for (const shape of SHAPES) {
    const match = shape.pattern.exec(name);
    if (match) return { shape, parts: match.slice(1) };
  }
  return undefined;
}

/** Piped stdin: one line, its trailing newline stripped; more than one line is refused by the caller. */
async function readPiped(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, "");
}

/**
 * Typed at a terminal: the terminal is put in raw mode (no echo) before the prompt is written, and
 * readline writes what it would echo into a sink. Ctrl-C and Ctrl-D give undefined.
 */
async function readPrompted(name: string): Promise<string | undefined> {
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  process.stderr.write(`value of ${name} (not echoed): `);
  const line = await new Promise<string | undefined>((resolve) => {
    rl.on("SIGINT", () => resolve(undefined));
    rl.on("close", () => resolve(undefined));
    rl.question("", resolve);
  });
  rl.close();
  process.stderr.write("\n");
  return line;
}

export default class SecretSet extends Command {
  static override summary =
    "Store a secret in the database, encrypted with the instance key, for a secret_ref of daemon.yaml";
  static override description =
    "Stores <name> encrypted with AES-256-GCM under the instance key, as `svc setup webhook` does, replacing a " +
    "secret of that name. The value is read from the environment variable named by --from-env; else, at a " +
    "terminal, it is prompted for and not echoed; else it is read from stdin (one line, its trailing newline " +
    "stripped). Never pass it on the command line, which other users and shell history can see. The instance " +
    "key file must exist first (`svc setup instance-key`, or restore it). An empty value is refused.\n\n" +
    "The name is the one daemon.yaml's secret_ref (token_ref, signing_secret_ref) will hold: " +
    `${SHAPES.map((shape) => shape.shape).join(", ")}. ` +
    "It prints the name it stored (never the value) and the line to write in daemon.yaml; then restart the " +
    "daemon, whose running processes keep the secrets they started with.";
  static override examples = [
    {
      description: "Store a target's API key, typed at the prompt (not echoed):",
      command: "<%= config.bin %> secret set target/claude/anthropic",
    },
    {
      description: "From an environment variable:",
      command: "<%= config.bin %> secret set target/codex/openai --from-env OPENAI_API_KEY",
    },
    {
      description: "From a pipe (one line):",
      command: "pass show svc/reader-token | <%= config.bin %> secret set token/reader",
    },
    "<%= config.bin %> secret set webhook/github --dir /etc/svc/config",
  ];
  static override args = {
    name: Args.string({
      description:
        "the stored secret's name, as daemon.yaml's secret_ref names it (e.g. target/claude/anthropic)",
      required: true,
    }),
  };
  static override flags = {
    "from-env": Flags.string({
      description:
        "name of the environment variable that holds the value (else prompted, or read from stdin)",
      helpValue: "<ENV_NAME>",
    }),
    dir: dirFlag,
  };

  /** The message as written (oclif's error() rewraps it), then exit 1. */
  private fail(message: string): never {
    process.stderr.write(`${message}\n`);
    return this.exit(1);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SecretSet);
    const env = configEnvOf(flags.dir);
    const name = args.name;
    const found = shapeOf(name);
    if (!found)
      this.fail(
        [
          `"${name}" is not a name a secret_ref of daemon.yaml can take, and nothing was stored. The names are:`,
          ...SHAPES.map((shape) => `  ${shape.shape}`),
          `<target>, <source>, <name>, <bot> and <credential> use letters, digits, ".", "_" and "-"; <id> also ":".`,
        ].join("\n"),
      );
    const { shape, parts } = found;
    if (shape.storedBy)
      this.fail(
        `${name} is a GitHub App's private key: store it with \`${shape.storedBy(parts)}\`, which checks the key; nothing was stored`,
      );
    const envName = flags["from-env"];
    if (envName !== undefined && !ENV_NAME.test(envName))
      this.fail(
        "--from-env takes the name of an environment variable, like OPENAI_API_KEY; nothing was stored",
      );

    // a missing or unreadable key is said before anyone types the secret
    const keyPath = instanceKeyPath(configDirFrom(env), env);
    try {
      await readInstanceKey(keyPath);
    } catch (error) {
      if (error instanceof InstanceKeyError) this.fail(`cannot store ${name}: ${error.message}`);
      throw error;
    }

    let value: string | undefined;
    let from: string;
    if (envName !== undefined) {
      value = env[envName];
      from = `the environment variable ${envName}`;
      if (value === undefined || value === "")
        this.fail(
          `the environment variable ${envName} is not set or is empty; export it with the secret, then run again (nothing was stored)`,
        );
    } else if (process.stdin.isTTY) {
      from = "the prompt";
      value = await readPrompted(name);
      if (value === undefined) this.fail(`cancelled: nothing was stored as ${name}`);
    } else {
      from = "stdin";
      value = await readPiped();
      if (/[\r\n]/.test(value))
        this.fail(`stdin holds more than one line: a secret is one line; nothing was stored as ${name}`);
    }
    if (value.trim() === "")
      this.fail(
        `no value given (${from} gave ${value === "" ? "nothing" : "only blanks"}): type it at the prompt, pipe it in or use --from-env; nothing was stored as ${name}`,
      );
    const refused = shape.check?.(value);
    if (refused !== undefined) this.fail(`${refused}; nothing was stored as ${name}`);

    const stored = await storeSecret(env, name, value);
    if (stored.failure !== undefined) this.fail(stored.failure);
    this.log(`stored the secret ${name} (from ${from}), encrypted with the instance key ${stored.keyPath}.`);
    this.log(`Next: in daemon.yaml, on ${shape.where(parts)}, write (in place of an inline value):`);
    this.log(`  ${shape.key}: ${name}`);
    this.log(
      "then restart the daemon (svc daemon restart) - running processes keep the configuration and secrets they started with.",
    );
  }
}
