import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** Secrets of the drill configuration; passed to the children through the environment. */
export const SECRETS = {
  DRILL_TOKEN: "drill-bearer-token-7f3a9c",
  DRILL_CODEHOST_SECRET: "drill-codehost-secret-41b2",
  DRILL_TRACKER_SECRET: "drill-tracker-secret-93de",
};

/**
 * The drill configuration, real YAML read by the real loader:
 * - `hook` (bearer) fires `on-hook`; `quiet` (bearer) fires nothing;
 * - `gh` (codehost) fires `on-push` for `push` events only; other events fire nothing;
 * - `lin` (tracker) fires `on-issue` for `Issue.create` only;
 * - `slow-hook` (bearer) fires `slow`, whose agent sleeps `DRILL_SLOW_SECONDS`.
 * Each firing pipeline runs one setup step (so a lost run leaves a task to account for) and the
 * `fast` command agent, which prints `{"ok":true}`.
 */
export async function writeDrillConfig(
  options: { concurrency?: number; slowSeconds?: number } = {},
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-drill-"));
  const files: Record<string, string> = {
    "daemon.yaml": `server:
  host: 127.0.0.1
  port: 7420
webhooks:
  sources:
    hook: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    quiet: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    slow-hook: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    gh: { verify: codehost, secret: "\${DRILL_CODEHOST_SECRET}" }
    lin: { verify: tracker, secret: "\${DRILL_TRACKER_SECRET}" }
targets:
  fast:
    runtime: command
    command: ["./bin/agent"]
    timeout: 30s
  slow:
    runtime: command
    command: ["./bin/slow-agent"]
    timeout: 5m
ask:
  targets: [fast]
worker:
  concurrency: ${options.concurrency ?? 4}
  grace_period: 2s
`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\npolicies: [short]\n---\nYou help.\n",
    "policies/short.md": "---\nname: short\ndescription: Be short.\n---\nBe short.\n",
    "bin/agent": "#!/bin/sh\ncat > /dev/null\necho '{\"ok\":true}'\n",
    // `exec` keeps the sleep in the agent's process group, which svc kills as a whole
    "bin/slow-agent": `#!/bin/sh\ncat > /dev/null\nsleep ${options.slowSeconds ?? 6}\necho '{"ok":true}'\n`,
    "pipelines/on-hook.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [hook]
targets: [fast]
setup:
  - run: "true"
instructions: handle the hook
`,
    "pipelines/on-push.yaml": `version: 1.0.0
agent: helper
trigger:
  codehost: [push]
targets: [fast]
setup:
  - run: "true"
instructions: handle the push
`,
    "pipelines/on-issue.yaml": `version: 1.0.0
agent: helper
trigger:
  tracker: [Issue.create]
targets: [fast]
setup:
  - run: "true"
instructions: handle the issue
`,
    "pipelines/slow.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [slow-hook]
targets: [slow]
setup:
  - run: "true"
instructions: take your time
`,
  };
  await writeConfigFiles(dir, files);
  return dir;
}

/** Writes a configuration directory's files; those under `bin/` are made executable. */
export async function writeConfigFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
    if (path.startsWith("bin/")) await chmod(join(dir, path), 0o755);
  }
}

/** The environment of every drill child: config dir, database, secrets, fast heartbeats. */
export function drillEnv(
  configDir: string,
  databaseUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    SVC_CONFIG_DIR: configDir,
    SVC_DATABASE_URL: databaseUrl,
    ...SECRETS,
    SVC_WORKER_HEARTBEAT_MS: "250",
    SVC_WORKER_STALE_MS: "2000",
    ...extra,
  };
}
