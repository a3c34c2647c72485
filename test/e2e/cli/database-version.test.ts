import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { assertServerVersion } from "../../../db/migrate.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakePostgres, startFakePostgres } from "../../support/fake-postgres.ts";
import { daemonYaml, freePort, PERSONA_MD, PIPELINE_YAML, svc } from "./support.ts";

/**
 * The contract's floor: a database older than PostgreSQL 15 fails the boot, and `svc doctor` names
 * it (`database_too_old`). No old server can be installed here, so a loopback server speaking the
 * PostgreSQL wire protocol answers the version questions as 14.9 does (test/support/fake-postgres.ts);
 * the real server of the test run is the other side of the line.
 */
describe("the minimum database version", () => {
  let dir: string;
  let old: FakePostgres;
  let fifteen: FakePostgres;
  let database: TestDatabase;
  let env: Record<string, string>;
  const OLD_MESSAGE =
    "the database server is PostgreSQL 14; svc needs PostgreSQL 15 or later. Upgrade the server, or unset SVC_DATABASE_URL to use the embedded PostgreSQL 17";

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-pg-version-"));
    await mkdir(join(dir, "pipelines"), { recursive: true });
    await mkdir(join(dir, "agents", "helper"), { recursive: true });
    await writeFile(join(dir, "daemon.yaml"), daemonYaml());
    await writeFile(join(dir, "pipelines", "hello.yaml"), PIPELINE_YAML);
    await writeFile(join(dir, "agents", "helper", "PERSONA.md"), PERSONA_MD);
    old = await startFakePostgres("14.9");
    fifteen = await startFakePostgres("15.0");
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    env = {
      SVC_CONFIG_DIR: dir,
      SVC_PORT: String(await freePort()),
      HELLO_TOKEN: "hello-token-version",
      READER_TOKEN: "reader-token-version",
      LEGACY_TOKEN: "legacy-token-version",
    };
  });

  afterAll(async () => {
    await old?.close();
    await fifteen?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the ingress and the worker refuse to boot on PostgreSQL 14, naming the floor, and change nothing", async () => {
    for (const role of ["ingress", "worker"]) {
      const boot = await svc([role], { ...env, SVC_DATABASE_URL: old.url });
      expect(boot.code, `${role}\n${boot.stdout}\n${boot.stderr}`).toBe(1);
      // oclif wraps the message over indented lines
      expect(boot.stderr.replace(/\s+/g, " ")).toContain(OLD_MESSAGE);
    }
    // asked its version and nothing else: no schema, no migration, no queue was attempted
    expect(new Set(old.statements)).toEqual(new Set(["SHOW server_version_num"]));
  }, 60_000);

  it("svc doctor reports database_too_old for PostgreSQL 14, and PostgreSQL 15 passes", async () => {
    const doctor = await svc(["doctor", "--json"], { ...env, SVC_DATABASE_URL: old.url });
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as {
      checks: { name: string; status: string; detail: string }[];
      problems: { file: string; code: string; message: string }[];
    };
    expect(report.checks.find((entry) => entry.name === "database")).toMatchObject({
      status: "error",
      detail: expect.stringContaining(OLD_MESSAGE),
    });
    expect(report.problems.filter((problem) => problem.file === "SVC_DATABASE_URL")).toEqual([
      expect.objectContaining({ code: "database_too_old", message: expect.stringContaining(OLD_MESSAGE) }),
    ]);

    const passing = await svc(["doctor", "--json"], { ...env, SVC_DATABASE_URL: fifteen.url });
    const after = JSON.parse(passing.stdout) as typeof report;
    expect(after.checks.find((entry) => entry.name === "database")).toMatchObject({
      status: "ok",
      detail: expect.stringContaining("PostgreSQL 15 at "),
    });
    expect(after.problems.map((problem) => problem.code)).not.toContain("database_too_old");
  }, 60_000);

  it("the real server of this run passes the same check", async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      expect(await assertServerVersion(pool)).toBeGreaterThanOrEqual(15);
    } finally {
      await pool.end();
    }
  });
});
