import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { startEmbeddedPostgres } from "../../db/embedded.ts";

/**
 * A fresh database for one benchmark: on SVC_TEST_DATABASE_URL / SVC_DATABASE_URL when set, else
 * on a throwaway embedded Postgres. `drop` removes it (and the embedded server).
 */
export async function database(): Promise<{ url: string; drop: () => Promise<void> }> {
  let adminUrl = process.env.SVC_TEST_DATABASE_URL ?? process.env.SVC_DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let embeddedDir: string | undefined;
  if (!adminUrl) {
    embeddedDir = await mkdtemp(join(tmpdir(), "svc-bench-pg-"));
    await chmod(embeddedDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir: join(embeddedDir, "postgres") });
    adminUrl = embedded.url;
    stopEmbedded = embedded.stop;
  }
  const name = `svc_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  // the writes of a benchmark that ran before this one are flushed now, not during the samples
  await admin.query("CHECKPOINT").catch(() => {});
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
      if (stopEmbedded) await stopEmbedded();
      if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
    },
  };
}
