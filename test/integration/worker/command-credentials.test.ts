import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { CommandTarget } from "../../../shared/config/types.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import type { TestDatabase } from "../../support/database.ts";
import {
  captureLogger,
  fire,
  lineage,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitForTrigger,
  writeScript,
} from "./helpers.ts";

/**
 * A `command` target's credentials: exported under their declared env name, and an exit the
 * target declares an authentication failure kills the credential as a 401 does for `openai`.
 */
const AGENT = `#!/bin/sh
cat > /dev/null
case "$AGENT_KEY" in
  revoked-by-code) echo "refused" >&2; exit 77 ;;
  revoked-by-text) echo "error: 401 Invalid API key" >&2; exit 1 ;;
  crash) echo "segfault" >&2; exit 2 ;;
esac
echo '{"key": "'"$AGENT_KEY"'"}'
`;

function target(name: string, keys: string[]): CommandTarget {
  return {
    name,
    runtime: "command",
    command: ["./bin/keyed-agent"],
    timeoutMs: 20_000,
    credentials: keys.map((key, index) => ({
      name: `c${index}`,
      secret: { kind: "inline", value: key },
      env: "AGENT_KEY",
    })),
    authFailure: { exitCodes: [77], stderr: "401|invalid api key" },
  };
}

describe("command targets with credentials", () => {
  let bed: TestBed;
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let worker: RunningWorker;
  let dir: string;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    ({ database, pool, dir } = bed);
    await writeScript(join(dir, "bin", "keyed-agent"), AGENT);
    const trigger = (hook: string) => ({ webhook: [hook], codehost: [], tracker: [] });
    const config = makeConfig(dir, {
      targets: {
        failover: target("failover", ["revoked-by-code", "revoked-by-text", "good-key"]),
        crashing: target("crashing", ["crash", "never-used"]),
      },
      pipelines: {
        keyed: pipeline("keyed", { agent: "helper", trigger: trigger("keyed-hook"), targets: ["failover"] }),
        crash: pipeline("crash", { agent: "helper", trigger: trigger("crash-hook"), targets: ["crashing"] }),
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    worker = await startWorker({ config, databaseUrl: database.url, logger, heartbeatMs: 500 });
  });

  afterAll(async () => {
    await worker?.stop(1_000);
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  it("an auth_failure exit code or stderr pattern kills the credential; the next one runs the agent", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "keyed-hook", eventName: "keyed-hook" });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].result).toEqual({ key: "good-key" });
    const { rows } = await pool.query(
      "SELECT credential, state, reason FROM svc.credential_cooldowns WHERE target = 'failover' ORDER BY credential",
    );
    expect(rows).toEqual([
      { credential: "c0", state: "dead", reason: "agent exited with 77 (auth_failure.exit_codes)" },
      { credential: "c1", state: "dead", reason: "agent output matched auth_failure.stderr (exit 1)" },
    ]);
  });

  it("any other failure is the agent's: agent_failed, and the credential stays usable", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "crash-hook", eventName: "crash-hook" });
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_failed" });
    const { rows } = await pool.query("SELECT * FROM svc.credential_cooldowns WHERE target = 'crashing'");
    expect(rows).toEqual([]);
  });
});
