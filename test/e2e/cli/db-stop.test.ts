import { chmod, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canConnect, startEmbeddedPostgres } from "../../../db/embedded.ts";
import { svc } from "./support.ts";

/** `svc db stop` against a real embedded Postgres, started the way `svc dev` starts it. */
let work: string;
let configDir: string;
let url: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "svc-db-stop-"));
  // as root the server runs as the postgres user, which must be able to enter this directory
  await chmod(work, 0o755);
  configDir = join(work, ".svc");
  url = (await startEmbeddedPostgres({ dataDir: join(configDir, "data", "postgres") })).url;
}, 180_000);

afterAll(async () => {
  await svc(["db", "stop", "--dir", configDir], { HOME: work });
  await rm(work, { recursive: true, force: true });
}, 60_000);

describe("svc db stop", () => {
  it("stops the embedded Postgres of the configuration directory, then says it is not running", async () => {
    expect(await canConnect(url)).toBe(true);
    const run = await svc(["db", "stop", "--dir", configDir], { HOME: work });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim()).toBe(`stopped the embedded Postgres in ${join(configDir, "data", "postgres")}`);
    expect(run.code).toBe(0);
    expect(await canConnect(url)).toBe(false);
    await expect(stat(join(configDir, "data", "postgres", "postmaster.pid"))).rejects.toThrow();
    const again = await svc(["db", "stop", "--dir", configDir, "--json"], { HOME: work });
    expect(JSON.parse(again.stdout)).toEqual({
      dataDir: join(configDir, "data", "postgres"),
      result: "not-running",
    });
  }, 60_000);

  it("reports a directory without an embedded Postgres", async () => {
    const run = await svc(["db", "stop", "--dir", join(work, "elsewhere")], { HOME: work });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("there is no embedded Postgres in");
  });
});
