import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockFile } from "../../../worker/checkout/lock.ts";

const LOCK = join(import.meta.dirname, "../../../worker/checkout/lock.ts");

/** The mirror's lock between the worker processes of a host: flock(2), held by a child of the holder. */
describe("a repository mirror's lock", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-checkout-lock-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("one exclusive holder at a time, many shared ones, and free again once released", async () => {
    const path = join(dir, "a.git.lock");
    const held = await lockFile(path, "exclusive", { wait: true });
    expect(held).toBeDefined();
    expect(await lockFile(path, "exclusive", { wait: false })).toBeUndefined();
    expect(await lockFile(path, "shared", { wait: false })).toBeUndefined();
    await held!.release();
    const first = await lockFile(path, "shared", { wait: false });
    const second = await lockFile(path, "shared", { wait: false });
    expect(first && second).toBeDefined();
    expect(await lockFile(path, "exclusive", { wait: false })).toBeUndefined();
    await first!.release();
    await second!.release();
    const again = await lockFile(path, "exclusive", { wait: false });
    expect(again).toBeDefined();
    await again!.release();
  });

  it("a waiter gets the lock when its holder releases it", async () => {
    const path = join(dir, "b.git.lock");
    const held = (await lockFile(path, "exclusive", { wait: true }))!;
    let got = false;
    const waiting = lockFile(path, "exclusive", { wait: true }).then((lock) => {
      got = true;
      return lock;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(got).toBe(false);
    await held.release();
    const lock = await waiting;
    expect(lock).toBeDefined();
    await lock!.release();
  });

  it("a worker killed while it holds the lock leaves it free: the kernel releases it with its holder", async () => {
    const path = join(dir, "c.git.lock");
    const script = `import { lockFile } from ${JSON.stringify(LOCK)};
await lockFile(${JSON.stringify(path)}, "exclusive", { wait: true });
console.log("held");
setInterval(() => {}, 1000);`;
    const worker = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) => worker.stdout.once("data", () => resolve()));
    expect(await lockFile(path, "exclusive", { wait: false })).toBeUndefined();
    worker.kill("SIGKILL");
    await new Promise((resolve) => worker.once("exit", resolve));
    // the holder's flock child sees its stdin close and exits; the lock goes with it
    let lock: Awaited<ReturnType<typeof lockFile>>;
    for (let i = 0; i < 100 && !lock; i++) {
      lock = await lockFile(path, "exclusive", { wait: false });
      if (!lock) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(lock).toBeDefined();
    await lock!.release();
  });
});
