import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { listSecretNames, readSecrets } from "../../../db/secrets.ts";
import { readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { childEnv, configDir, ROOT, runSvc } from "../ingress/processes.ts";
import { svc } from "./support.ts";

const FROM_ENV = `e2e-from-env-${randomBytes(12).toString("hex")}`;
const PIPED = `e2e-piped-${randomBytes(12).toString("hex")}`;
const TYPED = `e2e-typed-${randomBytes(12).toString("hex")}`;
const NODE = join(ROOT, "node_modules/.bin/node");
const HAS_SCRIPT = spawnSync("script", ["--version"]).status === 0;

/**
 * `svc secret set <name>` (issue 54): stores a secret sealed with the instance key under a name a
 * `secret_ref` can take, its value from --from-env, a piped stdin or a prompt that never echoes;
 * prints the name and the line to write, never the value.
 */
describe("svc secret set", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let key: Buffer;
  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url, { max: 1 });
    await migrate(pool);
    dir = await configDir({});
    env = childEnv({ SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url });
    expect((await runSvc(["setup", "instance-key"], env)).code).toBe(0);
    key = await readInstanceKey(join(dir, "instance.key"));
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dirname(dir), { recursive: true, force: true });
  });

  const stored = async (name: string) => (await readSecrets(pool, key, [name])).get(name);
  const names = async () => (await listSecretNames(pool)).map((row) => row.name);
  const never = (run: { stdout: string; stderr: string }, ...values: string[]) => {
    for (const value of values) expect(run.stdout + run.stderr).not.toContain(value);
  };

  it("--from-env: stores the variable's value under the name and prints the secret_ref line, never the value", async () => {
    const run = await runSvc(["secret", "set", "target/claude/anthropic", "--from-env", "MY_KEY"], {
      ...env,
      MY_KEY: FROM_ENV,
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    never(run, FROM_ENV);
    expect(run.stdout.split("\n")).toEqual([
      `stored the secret target/claude/anthropic (from the environment variable MY_KEY), encrypted with the instance key ${join(dir, "instance.key")}.`,
      'Next: in daemon.yaml, on the credential "anthropic" of targets.claude.credentials, write (in place of an inline value):',
      "  secret_ref: target/claude/anthropic",
      "then restart the daemon (svc daemon restart) - running processes keep the configuration and secrets they started with.",
      "",
    ]);
    expect(await stored("target/claude/anthropic")).toBe(FROM_ENV);
  });

  it("piped stdin: one line, its trailing newline stripped; replaces a secret of that name; names the key of a token_ref", async () => {
    const run = await svc(
      ["secret", "set", "target/claude/anthropic", "--dir", dir],
      { HOME: dirname(dir), SVC_DATABASE_URL: database.url },
      `${PIPED}\n`,
    );
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    never(run, PIPED, FROM_ENV);
    expect(run.stdout).toContain("stored the secret target/claude/anthropic (from stdin)");
    expect(await stored("target/claude/anthropic")).toBe(PIPED);

    const bot = await svc(
      ["secret", "set", "chat/ops", "--dir", dir],
      { SVC_DATABASE_URL: database.url },
      PIPED,
    );
    expect(bot.code).toBe(0);
    never(bot, PIPED);
    expect(bot.stdout).toContain("on channels.chat.bots.ops, write");
    expect(bot.stdout).toContain("\n  token_ref: chat/ops\n");
    expect(await stored("chat/ops")).toBe(PIPED);
  });

  it("a name no secret_ref takes is refused, naming the shapes, and nothing is stored", async () => {
    const before = await names();
    for (const name of ["target/claude", "foo/bar", "target/claude/anthropic/extra", "webhook/-x", "../x"]) {
      const run = await svc(["secret", "set", name, "--dir", dir], { SVC_DATABASE_URL: database.url }, PIPED);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe("");
      never(run, PIPED);
      expect(run.stderr).toContain(
        `"${name}" is not a name a secret_ref of daemon.yaml can take, and nothing was stored. The names are:\n  target/<target>/<credential>\n`,
      );
      expect(run.stderr).toContain("\n  webhook/<source>\n");
    }
    // an App key goes through the command that checks it
    const app = await svc(
      ["secret", "set", "codehost/app-private-key", "--dir", dir],
      { SVC_DATABASE_URL: database.url },
      PIPED,
    );
    expect(app.code).toBe(1);
    expect(app.stderr).toContain("svc setup codehost-app --key-file <app.pem>");
    // a signing token is checked as the loader checks it
    const signing = await svc(
      ["secret", "set", "webhook/gitlab/signing-secret", "--dir", dir],
      { SVC_DATABASE_URL: database.url },
      PIPED,
    );
    expect(signing.code).toBe(1);
    never(signing, PIPED);
    expect(signing.stderr).toContain("GitLab's signing token");
    expect(await names()).toEqual(before);
  });

  it("an empty value (stdin, --from-env), blanks or more than one line are refused, and nothing is stored", async () => {
    const before = await names();
    const dbEnv = { SVC_DATABASE_URL: database.url };
    for (const input of ["", "\n", "   \n"]) {
      const run = await svc(["secret", "set", "token/empty", "--dir", dir], dbEnv, input);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(/^no value given \(stdin gave (nothing|only blanks)\)/);
      expect(run.stderr).toContain("nothing was stored as token/empty");
    }
    const twoLines = await svc(["secret", "set", "token/empty", "--dir", dir], dbEnv, `${PIPED}\nsecond\n`);
    expect(twoLines.code).toBe(1);
    never(twoLines, PIPED);
    expect(twoLines.stderr).toContain("stdin holds more than one line");
    const unset = await runSvc(["secret", "set", "token/empty", "--from-env", "NOT_SET"], env);
    expect(unset.code).toBe(1);
    expect(unset.stderr).toContain("the environment variable NOT_SET is not set or is empty");
    const empty = await runSvc(["secret", "set", "token/empty", "--from-env", "EMPTY"], {
      ...env,
      EMPTY: "",
    });
    expect(empty.code).toBe(1);
    expect(await names()).toEqual(before);
    expect(before).not.toContain("token/empty");
  });

  it("without the instance key, says so before reading a value, as svc setup webhook does", async () => {
    const other = await configDir({});
    try {
      const run = await svc(
        ["secret", "set", "token/reader", "--dir", other],
        { SVC_DATABASE_URL: database.url },
        PIPED,
      );
      expect(run.code).toBe(1);
      never(run, PIPED);
      expect(run.stderr).toMatch(/^cannot store token\/reader: /);
      expect(await names()).not.toContain("token/reader");
    } finally {
      await rm(dirname(other), { recursive: true, force: true });
    }
  });

  it.skipIf(!HAS_SCRIPT)(
    "at a terminal (script(1) gives it one): prompts, never echoes what is typed, stores it",
    async () => {
      const command = [NODE, join(ROOT, "bin/svc.js"), "secret", "set", "token/typed"]
        .map((part) => `'${part}'`)
        .join(" ");
      const child = spawn("script", ["-qec", command, "/dev/null"], {
        cwd: ROOT,
        env: { ...env, SHELL: "/bin/sh", TERM: "dumb" },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let transcript = "";
      const prompted = new Promise<void>((resolve) => {
        child.stdout.on("data", (chunk) => {
          transcript += chunk;
          if (transcript.includes("(not echoed): ")) resolve();
        });
      });
      const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
      await prompted;
      expect(transcript).toContain("value of token/typed (not echoed): ");
      child.stdin.write(`${TYPED}\r`);
      const code = await exited;
      expect(code).toBe(0);
      expect(transcript).toContain("stored the secret token/typed (from the prompt)");
      expect(transcript).toContain("  secret_ref: token/typed");
      expect(transcript).not.toContain(TYPED);
      expect(transcript).not.toContain(TYPED.slice(-8));
      expect(await stored("token/typed")).toBe(TYPED);
    },
  );

  it("--help shows examples", async () => {
    const run = await runSvc(["secret", "set", "--help"], childEnv({}));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("$ svc secret set target/claude/anthropic");
    expect(run.stdout).toContain("--from-env=<ENV_NAME>");
  });
});
