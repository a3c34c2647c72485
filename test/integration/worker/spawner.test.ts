import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHELL_VARIABLES } from "../../../worker/gates.ts";
import type { PreparedProcess, SpawnSpec } from "../../../worker/spawner.ts";
import { Spawner } from "../../../worker/spawner.ts";
import { groupAlive, waitFor } from "./helpers.ts";

const PATH = process.env.PATH ?? "/usr/bin:/bin";

/**
 * Prepares `spec`, insisting on the kind of gate: a spare shell, which the spawner replaces a few
 * milliseconds after one is taken (so this waits for one to be ready), or a gate started for it.
 */
async function prepareOn(spawner: Spawner, spec: SpawnSpec, spare: boolean): Promise<PreparedProcess> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const prepared = spawner.prepare(spec)!;
    expect(prepared).toBeDefined();
    if ((await prepared.started).spare === spare) return prepared;
    prepared.discard();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no ${spare ? "spare" : "fresh"} gate in 100 attempts`);
}

/**
 * What a step sees: $0 and $#, its directory, its fds one a line (`ls` alone: a pipeline or $(…)
 * would list the shell's own transient pipe fds), then its environment, NUL-separated.
 */
const REPORT = 'echo "zero=$0 args=$# pwd=$(pwd)"; ls /proc/$$/fd; echo --; env -0 | LC_ALL=C sort -z';

async function runBoth(spawner: Spawner, spec: Omit<SpawnSpec, "logFile">, dir: string, spare: boolean) {
  const gatedLog = join(dir, "gated.log");
  const directLog = join(dir, "direct.log");
  const prepared = await prepareOn(spawner, { ...spec, logFile: gatedLog, truncate: true }, spare);
  expect(prepared.held).toBe(true);
  const gated = await prepared.release({});
  const direct = await spawner.run({ ...spec, logFile: directLog, truncate: true });
  return {
    gated,
    direct,
    gatedLog: await readFile(gatedLog, "utf8"),
    directLog: await readFile(directLog, "utf8"),
  };
}

/** Children held at a gate (Spawner.prepare), through a real spawner process and real shells. */
describe.each([
  { spare: true, gate: "a spare shell" },
  { spare: false, gate: "a gate started for it" },
])("spawner: a child prepared on $gate", ({ spare }) => {
  let spawner: Spawner;
  let dir: string;

  beforeAll(async () => {
    spawner = await Spawner.start({ spares: spare ? 2 : 0 });
    dir = await mkdtemp(join(tmpdir(), "svc-spawner-"));
  });

  afterAll(async () => {
    await spawner?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs as a direct `sh -c` would: its directory (made after the prepare), exactly its environment, its fds, no trace of the gate", async () => {
    const cwd = join(dir, "later", "checkout");
    const env = {
      PATH,
      HOME: dir,
      PAYLOAD_JSON: `{"x":"$(touch ${dir}/pwned); \`id\` '\\'' \\"q\\"\nline two"}`,
      EMPTY: "",
    };
    const spec = { argv: ["/bin/sh", "-c", REPORT], cwd, env };
    const prepared = await prepareOn(
      spawner,
      { ...spec, logFile: join(dir, "gated.log"), truncate: true },
      spare,
    );
    await mkdir(cwd, { recursive: true }); // the worker makes the workspace beside the transaction
    expect(await prepared.release({})).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
    const direct = await spawner.run({ ...spec, logFile: join(dir, "direct.log"), truncate: true });
    expect(direct.exitCode).toBe(0);
    const gatedLog = await readFile(join(dir, "gated.log"), "utf8");
    expect(gatedLog).toBe(await readFile(join(dir, "direct.log"), "utf8"));
    const [head, environment] = gatedLog.split("--\n");
    const [first, ...fds] = head!.trim().split("\n");
    expect(first).toBe(`zero=/bin/sh args=0 pwd=${cwd}`);
    expect(fds).toContain("2");
    expect(fds).not.toContain("3");
    const seen = Object.fromEntries(
      environment!
        .split("\0")
        .filter((entry) => entry !== "")
        .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
    );
    // what `sh` itself always exports, and nothing of the gate (no OLDPWD, no svc_ variable)
    expect(seen).toEqual({ ...env, PWD: cwd });
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("never runs its command when discarded, and its process group is gone", async () => {
    const marker = join(dir, "ran");
    const prepared = await prepareOn(
      spawner,
      {
        argv: ["/bin/sh", "-c", `touch ${marker}`],
        cwd: dir,
        env: { PATH },
        logFile: join(dir, "discarded.log"),
      },
      spare,
    );
    const { pid } = await prepared.started;
    expect(groupAlive(pid)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the gate is waiting, the prelude read
    expect(prepared.discard()).toBe(true);
    expect(prepared.held).toBe(false);
    expect(prepared.discard()).toBe(false);
    await waitFor(async () => !groupAlive(pid), "the gate's group to end");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(existsSync(marker)).toBe(false);
  });

  it("is stopped by its signal and its timeout like any other child", async () => {
    const controller = new AbortController();
    const spec = { argv: ["/bin/sh", "-c", "sleep 30"], cwd: dir, env: { PATH } };
    const prepared = await prepareOn(spawner, { ...spec, logFile: join(dir, "aborted.log") }, spare);
    const running = prepared.release({ signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    expect(await running).toMatchObject({ aborted: true, timedOut: false });

    const slow = await prepareOn(spawner, { ...spec, logFile: join(dir, "timeout.log") }, spare);
    expect(await slow.release({ timeoutMs: 150 })).toMatchObject({ timedOut: true });
  });

  it("reports a step's failure and output as a direct `sh -c` does", async () => {
    const both = await runBoth(
      spawner,
      {
        argv: ["/bin/sh", "-c", "echo out; nosuchcommand-svc; echo err >&2; exit 7"],
        cwd: dir,
        env: { PATH },
      },
      dir,
      spare,
    );
    expect(both.gated.exitCode).toBe(7);
    expect(both.direct.exitCode).toBe(7);
    expect(both.gatedLog).toBe(both.directLog);
    expect(both.gatedLog).toContain("/bin/sh: 1: nosuchcommand-svc: not found");
  });
});

describe("spawner: spare shells", () => {
  let spawner: Spawner;
  let dir: string;

  beforeAll(async () => {
    spawner = await Spawner.start({ spares: 3 });
    dir = await mkdtemp(join(tmpdir(), "svc-spares-"));
  });

  afterAll(async () => {
    await spawner?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("hand any environment, directory and argv to their child exactly (property)", async () => {
    // the shell's own variables take a gate of their own; PATH is always given below
    const reserved = new Set([...SHELL_VARIABLES, "PATH"]);
    const name = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,8}$/).filter((candidate) => !reserved.has(candidate));
    const value = fc.string({ unit: "binary", maxLength: 60 }).filter((text) => !text.includes("\0"));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 6 }), value, async (env, argument) => {
        const full = { ...env, PATH };
        // every variable and the argument, NUL-separated, so no byte of them is lost or added
        const dump = 'printf "%s\\0" "$1"; env -0 | LC_ALL=C sort -z';
        const both = await runBoth(
          spawner,
          { argv: ["/bin/sh", "-c", dump, "/bin/sh", argument], cwd: dir, env: full },
          dir,
          true,
        );
        expect(both.gated.exitCode).toBe(0);
        expect(both.gatedLog).toBe(both.directLog);
      }),
      { numRuns: 25 },
    );
  });

  it("are not used for an environment that names a variable of the shell itself; a gate of its own runs it the same", async () => {
    const both = await runBoth(
      spawner,
      { argv: ["/bin/sh", "-c", REPORT], cwd: dir, env: { PATH, OPTIND: "5", PS1: "x" } },
      dir,
      false,
    );
    expect(both.gatedLog).toBe(both.directLog);
    const prepared = spawner.prepare({
      argv: ["/bin/sh", "-c", "true"],
      cwd: dir,
      env: { PATH, PS2: "y" },
      logFile: join(dir, "ps2.log"),
    })!;
    expect((await prepared.started).spare).toBe(false);
    expect(await prepared.release({})).toMatchObject({ exitCode: 0 });
  });

  it("run their child when taken and released before their shell has even started", async () => {
    // a new spawner's spare is taken at once; later ones are taken as soon as they are replaced
    const eager = await Spawner.start({ spares: 1 });
    try {
      let onSpare = 0;
      for (let round = 0; round < 25; round += 1) {
        const prepared = eager.prepare({
          argv: ["/bin/sh", "-c", `echo round ${round}`],
          cwd: dir,
          env: { PATH },
          logFile: join(dir, `eager-${round}.log`),
          truncate: true,
        })!;
        const outcome = await prepared.release({ timeoutMs: 10_000 });
        expect(outcome).toMatchObject({ exitCode: 0, timedOut: false });
        expect(await readFile(join(dir, `eager-${round}.log`), "utf8")).toBe(`round ${round}\n`);
        if ((await prepared.started).spare) onSpare += 1;
        await new Promise((resolve) => setTimeout(resolve, round % 5));
      }
      expect(onSpare).toBeGreaterThan(0);
    } finally {
      await eager.close();
    }
  });

  it("end with their spawner, however it ends", async () => {
    const doomed = await Spawner.start({ spares: 1 });
    const spawnerPid = doomed.pid!;
    const sparePid = await waitFor(async () => {
      try {
        const children = execFileSync("pgrep", ["-P", String(spawnerPid), "-x", "sh"])
          .toString()
          .trim();
        return Number(children.split("\n")[0]) || undefined;
      } catch {
        return undefined; // pgrep exits 1 until the spare is up
      }
    }, "the spare shell");
    process.kill(spawnerPid, "SIGKILL");
    await waitFor(async () => !groupAlive(sparePid), "the spare to end with its spawner");
    await doomed.close();
  });

  it("are refused an environment that names what a gate sets", () => {
    for (const variable of ["OLDPWD", "svc_gate"])
      expect(
        spawner.prepare({
          argv: ["/bin/sh", "-c", "true"],
          cwd: dir,
          env: { PATH, [variable]: "x" },
          logFile: join(dir, "never.log"),
        }),
      ).toBeUndefined();
  });
});
