import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import YAML from "yaml";
import { migrate } from "../../db/migrate.ts";
import { putSecret } from "../../db/secrets.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";

const ROOT = join(import.meta.dirname, "..", "..");
export const REFERENCE = join(ROOT, "examples", "reference", ".svc");
const BIN = join(ROOT, "bin", "svc.js");

/** The webhook source the no-op pipeline added to the reference configuration listens on. */
export const NOOP_SOURCE = "noop-hook";

export interface ReferenceOptions {
  /** the base URL the `gpt` target (the rewrite's and /ask's first target) is answered at */
  gptUrl?: string;
  /**
   * adds a no-op pipeline fired by NOOP_SOURCE (one setup step `true`, a command agent printing
   * `{}`), without a knowledge block, as a team's pipelines are: each run retrieves its passages,
   * with the reference configuration's query rewrite (`rewrite.targets: [gpt]`)
   */
  noop?: boolean;
}

/**
 * examples/reference/.svc as it ships, runnable: its variables set, an instance key, and the stored
 * secrets it names. `worker.metrics_port` is dropped: two workers on one host cannot share the port.
 * The values of its variables and secrets are the keys the `gpt` target sends: OPENAI_KEY_A is
 * `bench-key-a`.
 */
export async function referenceConfig(
  databaseUrl: string,
  options: ReferenceOptions = {},
): Promise<Record<string, string> & { SVC_CONFIG_DIR: string }> {
  const dir = await mkdtemp(join(tmpdir(), "svc-reference-"));
  await cp(REFERENCE, dir, { recursive: true });
  const daemonPath = join(dir, "daemon.yaml");
  const daemon = YAML.parseDocument(await readFile(daemonPath, "utf8"));
  daemon.deleteIn(["worker", "metrics_port"]);
  if (options.noop) {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's own variable syntax, substituted by svc
    daemon.setIn(["webhooks", "sources", NOOP_SOURCE], { verify: "bearer", secret: "${DEPLOY_HOOK_TOKEN}" });
    daemon.setIn(["targets", "noop"], { runtime: "command", command: ["/bin/echo", "{}"], timeout: "30s" });
    await mkdir(join(dir, "pipelines"), { recursive: true });
    await writeFile(
      join(dir, "pipelines", "noop.yaml"),
      `version: 1.0.0\nagent: reviewer\ntrigger:\n  webhook: [${NOOP_SOURCE}]\ntargets: [noop]\nsetup:\n  - run: "true"\ninstructions: Check the deploy window before the release.\n`,
    );
  }
  await writeFile(daemonPath, daemon.toString());
  if (options.gptUrl) await pointGpt(dir, options.gptUrl);
  const env = {
    SVC_CONFIG_DIR: dir,
    SVC_DATABASE_URL: databaseUrl,
    DEPLOY_HOOK_TOKEN: "bench-token",
    LINEAR_WEBHOOK_SECRET: "bench-linear",
    OPENAI_KEY_A: "bench-key-a",
    OPENAI_KEY_B: "bench-key-b",
    CHAT_BOT_TOKEN: "bench-chat",
    CI_TOKEN: "bench-ci",
    // the reference configuration acts as a GitHub App: a key of its own, which nothing here signs with
    GITHUB_APP_ID: "123456",
    GITHUB_APP_PRIVATE_KEY: generateKeyPairSync("rsa", { modulusLength: 2048 })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString(),
  };
  const made = spawnSync(process.execPath, [BIN, "setup", "instance-key"], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  if (made.status !== 0) throw new Error(`svc setup instance-key failed: ${made.stderr}`);
  const key = await readInstanceKey(join(dir, "instance.key"));
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    // the stored secrets need svc's tables: the roles would make them at their start
    await migrate(pool);
    for (const name of [
      "webhook/github",
      "codehost/default",
      "codehost/principal/42",
      "metrics/token",
      "target/claude/anthropic",
    ])
      await putSecret(pool, key, name, `bench-${name}`);
  } finally {
    await pool.end();
  }
  return env;
}

/** Points the reference configuration's `gpt` target in `dir` at another base URL (read at a role's start). */
export async function pointGpt(dir: string, url: string): Promise<void> {
  const path = join(dir, "daemon.yaml");
  const daemon = YAML.parseDocument(await readFile(path, "utf8"));
  daemon.setIn(["targets", "gpt", "base_url"], url);
  await writeFile(path, daemon.toString());
}
