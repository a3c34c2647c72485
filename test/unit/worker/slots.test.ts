import { describe, expect, it } from "vitest";
import { Slots } from "../../../worker/queue/slots.ts";

describe("worker slots", () => {
  it("gives a slot back when the run's event resolution throws, and the next run gets it", async () => {
    let freed = 0;
    const slots = new Slots(1, () => (freed += 1));
    const errors: unknown[] = [];
    const [lease] = slots.take(5);
    expect(slots.free).toBe(0);
    slots.run(
      lease!,
      async () => {
        throw new Error("event resolution failed: the replayed trigger could not be read");
      },
      (error) => errors.push(error),
    );
    await slots.idle();
    expect((errors[0] as Error).message).toMatch(/event resolution failed/);
    expect(slots.free).toBe(1);
    expect(freed).toBe(1);
    // the slot really is usable again: a second run takes it and ends normally
    const [again] = slots.take(1);
    expect(again).toBeDefined();
    let ran = false;
    slots.run(
      again!,
      async () => {
        ran = true;
      },
      () => {},
    );
    await slots.idle();
    expect(ran).toBe(true);
    expect(slots.free).toBe(1);
  });

  it("gives a slot back when the run throws synchronously, before its first await", async () => {
    const slots = new Slots(2);
    const [lease] = slots.take(1);
    slots.run(
      lease!,
      () => {
        throw new Error("thrown before any promise");
      },
      () => {},
    );
    await slots.idle();
    expect(slots.free).toBe(2);
  });

  it("never hands out more slots than it has, and releasing an unused slot twice gives back one", () => {
    const slots = new Slots(3);
    const leases = slots.take(10);
    expect(leases).toHaveLength(3);
    expect(slots.take(1)).toHaveLength(0);
    leases[0]!.release();
    leases[0]!.release();
    expect(slots.free).toBe(1);
  });

  it("a slot handed to a run is not given back by a release meant for unused slots", async () => {
    const slots = new Slots(1);
    const [lease] = slots.take(1);
    let finish: () => void = () => {};
    slots.run(
      lease!,
      () => new Promise<void>((resolve) => (finish = resolve)),
      () => {},
    );
    lease!.release(); // the claim loop's `finally` releases every slot of a batch
    expect(slots.free).toBe(0);
    expect(() =>
      slots.run(
        lease!,
        async () => {},
        () => {},
      ),
    ).toThrow(/handed/);
    finish();
    await slots.idle();
    expect(slots.free).toBe(1);
  });
});
