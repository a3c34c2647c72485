import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Spawner } from "../../../worker/spawner.ts";
import { groupAlive, waitFor } from "./helpers.ts";

const PATH = process.env.PATH ?? "/usr/bin:/bin";

/** Children held at a gate (Spawner.prepare), through a real spawner process and real shells. */
describe("spawner: prepared children", () => {
  let spawner: Spawner;
  let dir: string;

  beforeAll(async () => {
    spawner = await Spawner.start();
    dir = await mkdtemp(join(tmpdir(), "svc-spawner-"));
  });

  afterAll(async () => {
    await spawner?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("a released child runs as a direct `sh -c` would: its directory (made after the prepare), exactly its environment, its fds, no trace of the gate", async () => {
    const cwd = join(dir, "later", "checkout");
    const env = { PATH, HOME: dir, PAYLOAD_JSON: `{"x":"$(touch ${dir}/pwned); \`id\`"}`, EMPTY: "" };
    // `ls` alone, one fd a line: a pipeline or $(…) would list the shell's own transient pipe fds
    const script = 'echo "zero=$0 args=$# pwd=$(pwd)"; ls /proc/$$/fd; echo --; env | sort';
    const prepared = spawner.prepare({
      argv: ["/bin/sh", "-c", script],
      cwd,
      env,
      logFile: join(dir, "later", "gated.log"),
      truncate: true,
    })!;
    expect(prepared.held).toBe(true);
    await mkdir(cwd, { recursive: true }); // the worker makes the workspace beside the transaction
    expect(await prepared.release({})).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
    const direct = await spawner.run({
      argv: ["/bin/sh", "-c", script],
      cwd,
      env,
      logFile: join(dir, "later", "direct.log"),
      truncate: true,
    });
    expect(direct.exitCode).toBe(0);
    const gatedLog = await readFile(join(dir, "later", "gated.log"), "utf8");
    expect(gatedLog).toBe(await readFile(join(dir, "later", "direct.log"), "utf8"));
    const [first, ...rest] = gatedLog.trim().split("\n");
    const fds = rest.slice(0, rest.indexOf("--"));
    const envLines = rest.slice(rest.indexOf("--") + 1);
    expect(first).toBe(`zero=/bin/sh args=0 pwd=${cwd}`);
    expect(fds).toContain("2");
    expect(fds).not.toContain("3");
    const seen = Object.fromEntries(
      envLines.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    // what `sh` itself always exports, and nothing of the gate (no OLDPWD, no svc_gate)
    expect(seen).toEqual({ ...env, PWD: cwd });
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("a discarded child never runs its command, and its process group is gone", async () => {
    const marker = join(dir, "ran");
    let pid: number | undefined;
    const prepared = spawner.prepare({
      argv: ["/bin/sh", "-c", `touch ${marker}`],
      cwd: dir,
      env: { PATH },
      logFile: join(dir, "discarded.log"),
    })!;
    // the gate shell is up and waiting before the discard
    const pids = await waitFor(async () => {
      try {
        const out = execFileSync("pgrep", ["-f", `touch ${marker}`])
          .toString()
          .trim();
        return out.split("\n").map(Number);
      } catch {
        return undefined; // pgrep exits 1 until the gate shell is up
      }
    }, "the gate shell");
    pid = pids[0];
    expect(prepared.discard()).toBe(true);
    expect(prepared.held).toBe(false);
    expect(prepared.discard()).toBe(false);
    await waitFor(async () => pid !== undefined && !groupAlive(pid), "the gate's group to end");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(existsSync(marker)).toBe(false);
  });

  it("a released child is stopped by its signal and its timeout like any other", async () => {
    const controller = new AbortController();
    const prepared = spawner.prepare({
      argv: ["/bin/sh", "-c", "sleep 30"],
      cwd: dir,
      env: { PATH },
      logFile: join(dir, "aborted.log"),
    })!;
    const running = prepared.release({ signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    expect(await running).toMatchObject({ aborted: true, timedOut: false });

    const slow = spawner.prepare({
      argv: ["/bin/sh", "-c", "sleep 30"],
      cwd: dir,
      env: { PATH },
      logFile: join(dir, "timeout.log"),
    })!;
    expect(await slow.release({ timeoutMs: 150 })).toMatchObject({ timedOut: true });
  });

  it("is not prepared for an environment that names what the gate sets", () => {
    for (const name of ["OLDPWD", "svc_gate"])
      expect(
        spawner.prepare({
          argv: ["/bin/sh", "-c", "true"],
          cwd: dir,
          env: { PATH, [name]: "x" },
          logFile: join(dir, "never.log"),
        }),
      ).toBeUndefined();
  });
});
