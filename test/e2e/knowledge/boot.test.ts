import { cp, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { writeExecutable } from "../../integration/knowledge/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { svc } from "../cli/support.ts";
import { startRole, writeConfigDir } from "../worker/processes.ts";

const FIXTURE = join(import.meta.dirname, "../../fixtures/knowledge/knowledge");

function daemonYaml(extra: string): string {
  return `targets:\n  echo:\n    runtime: command\n    command: ["cat"]\n    timeout: 1m\nask:\n  targets: [echo]\n${extra}`;
}

/** The retrieval tool floor and the ask block, as the real `svc ingress`, `svc worker` and `svc doctor` see them. */
describe("boot: knowledge sources need qmd 2.8.3 or later; the ask block is required", () => {
  let database: TestDatabase;
  const dirs: string[] = [];

  const configWith = async (yaml: string, knowledge = true) => {
    const dir = await writeConfigDir({ "daemon.yaml": yaml });
    if (knowledge) await cp(FIXTURE, join(dir, "knowledge"), { recursive: true });
    dirs.push(dir);
    return dir;
  };
  const refused = async (role: "ingress" | "worker", dir: string) => {
    const process = startRole(role, {
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      SVC_PORT: "0",
      HOME: dir,
    });
    const code = await process.exited;
    return { code, output: process.output.join("\n") };
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
  });
  afterAll(async () => {
    await database?.drop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("a qmd that reports 2.8.2 keeps both roles from starting, naming the floor and the fix; doctor says the same", async () => {
    const dir = await configWith("");
    const stub = await writeExecutable(join(dir, "qmd-2.8.2"), '#!/bin/sh\necho "qmd 2.8.2 (0000000)"\n');
    await rm(join(dir, "daemon.yaml"));
    await writeConfigDirFile(dir, daemonYaml(`knowledge:\n  retrieval:\n    bin: ${stub}\n`));
    for (const role of ["ingress", "worker"] as const) {
      const { code, output } = await refused(role, dir);
      expect(code, output).not.toBe(0);
      expect(output).toContain("qmd 2.8.3 or later is required");
      expect(output).toContain("is 2.8.2");
      expect(output).toContain("knowledge.retrieval.bin");
    }
    const doctor = await svc(["doctor", "--dir", dir, "--json"], { HOME: dir });
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as {
      checks: { name: string; status: string; detail: string }[];
    };
    const check = report.checks.find((c) => c.name === "knowledge");
    expect(check?.status).toBe("error");
    expect(check?.detail).toContain("is 2.8.2");
  });

  it("a missing qmd keeps the ingress from starting", async () => {
    const dir = await configWith(daemonYaml("knowledge:\n  retrieval:\n    bin: /nonexistent/qmd\n"));
    const { code, output } = await refused("ingress", dir);
    expect(code).not.toBe(0);
    expect(output).toContain("2.8.3");
    expect(output).toContain("it is missing at /nonexistent/qmd");
  });

  it("without knowledge sources a missing qmd is no reason to refuse; doctor skips the check", async () => {
    const dir = await configWith(daemonYaml("knowledge:\n  retrieval:\n    bin: /nonexistent/qmd\n"), false);
    const doctor = await svc(["doctor", "--dir", dir, "--json"], { HOME: dir });
    const report = JSON.parse(doctor.stdout) as { checks: { name: string; status: string }[] };
    expect(report.checks.find((c) => c.name === "knowledge")?.status).toBe("skipped");
  });

  it("svc knowledge reindex rebuilds on this host and prints its progress", async () => {
    const dir = await configWith(daemonYaml(""));
    const run = await svc(["knowledge", "reindex", "--dir", dir], { HOME: dir });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("knowledge index: indexing 8 documents (local engine)");
    expect(run.stdout).toMatch(/knowledge index: 8 documents indexed in \d+ ms/);
    const doctor = await svc(["doctor", "--dir", dir, "--json"], { HOME: dir });
    const report = JSON.parse(doctor.stdout) as {
      checks: { name: string; status: string; detail: string }[];
    };
    const check = report.checks.find((c) => c.name === "knowledge");
    expect(check?.status).toBe("warning");
    expect(check?.detail).toMatch(/^8 documents, local engine, qmd \d+\.\d+\.\d+; note: hybrid retrieval/);
    expect(check?.detail).toContain("serves BM25");
    const help = await svc(["knowledge", "reindex", "--help"], { HOME: dir });
    expect(help.stdout).toContain("EXAMPLES");
  });

  it("the ask block missing or without targets still keeps the daemon from booting", async () => {
    const noAsk = await configWith('targets:\n  echo:\n    runtime: command\n    command: ["cat"]\n', false);
    const missing = await refused("ingress", noAsk);
    expect(missing.code).not.toBe(0);
    expect(missing.output).toContain('"ask" is required');
    const empty = await configWith(
      'targets:\n  echo:\n    runtime: command\n    command: ["cat"]\nask:\n  targets: []\n',
      false,
    );
    const none = await refused("ingress", empty);
    expect(none.code).not.toBe(0);
    expect(none.output).toContain('"ask.targets" must not be empty');
  });
});

async function writeConfigDirFile(dir: string, yaml: string): Promise<void> {
  await import("node:fs/promises").then((fs) => fs.writeFile(join(dir, "daemon.yaml"), yaml));
}
