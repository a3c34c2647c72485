import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres } from "../../db/embedded.ts";
import { dropDatabasesWithPrefix, RUN_PREFIX } from "./database.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** URL of a database on the test server with rights to CREATE DATABASE */
    adminDatabaseUrl: string;
  }
}

/**
 * Tests use the server named by SVC_TEST_DATABASE_URL or SVC_DATABASE_URL; on a fresh
 * machine without one, they start the same embedded Postgres the daemon defaults to.
 */
export default async function setup(project: TestProject) {
  const configured = process.env.SVC_TEST_DATABASE_URL ?? process.env.SVC_DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let embeddedDir: string | undefined;
  let adminUrl: string;
  if (configured) {
    adminUrl = configured;
  } else {
    embeddedDir = await mkdtemp(join(tmpdir(), "svc-test-pg-"));
    // as root the server runs as the postgres user, which must be able to enter this directory
    await chmod(embeddedDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir: join(embeddedDir, "postgres") });
    adminUrl = embedded.url;
    stopEmbedded = embedded.stop;
  }
  project.provide("adminDatabaseUrl", adminUrl);
  process.env.SVC_TEST_ADMIN_URL = adminUrl;
  return async () => {
    await dropDatabasesWithPrefix(adminUrl, RUN_PREFIX);
    if (stopEmbedded) await stopEmbedded();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  };
}
