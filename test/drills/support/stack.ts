import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { writeDrillConfig } from "./config.ts";
import { type SvcProcess, stopAll } from "./processes.ts";
import type { ReverseProxy } from "./proxy.ts";

/** What a drill on the shared test server holds: filled in by beforeAll, released by afterAll. */
export interface DrillStack {
  database: TestDatabase;
  /** for the drill's own accounting queries */
  pool: pg.Pool;
  /** the drill's configuration directory */
  dir: string;
  /** every svc process the drill starts; all are stopped afterwards, killed ones included */
  processes: SvcProcess[];
  proxy?: ReverseProxy;
}

/**
 * Registers the hooks of one drill: a fresh database and configuration before, and afterwards
 * processes, proxy, pool, database and directory released in that order, whatever the drill did.
 */
export function useDrillStack(config: Parameters<typeof writeDrillConfig>[0]): DrillStack {
  const stack = { processes: [] as SvcProcess[] } as DrillStack;
  beforeAll(async () => {
    stack.database = await createTestDatabase(inject("adminDatabaseUrl"));
    stack.pool = new pg.Pool({ connectionString: stack.database.url, max: 2 });
    stack.dir = await writeDrillConfig(config);
  });
  afterAll(async () => {
    await stopAll(stack.processes);
    await stack.proxy?.close();
    await stack.pool?.end();
    await stack.database?.drop();
    if (stack.dir) await rm(stack.dir, { recursive: true, force: true });
  });
  return stack;
}
