import { chmod, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../db/embedded.ts";

describe("embedded Postgres", () => {
  const dirs: string[] = [];
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("initialises on first use, then reuses the running server from another start", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-embedded-"));
    dirs.push(dir);
    await chmod(dir, 0o755);
    const dataDir = join(dir, "data", "postgres");
    const [first, second] = await Promise.all([
      startEmbeddedPostgres({ dataDir, database: "svc" }),
      startEmbeddedPostgres({ dataDir, database: "svc" }),
    ]);
    stops.push(first.stop);
    expect(second.url).toBe(first.url);
    const settings = await stat(`${dataDir}.json`);
    expect(settings.mode & 0o777).toBe(0o600);
    const client = new pg.Client({ connectionString: first.url });
    await client.connect();
    const { rows } = await client.query("SHOW server_version_num");
    await client.end();
    expect(Number(rows[0].server_version_num)).toBeGreaterThanOrEqual(170000);
  });
});
