import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { DNS_ANSWER_TTL_MS, DNS_NEGATIVE_TTL_MS, ModelDnsCache } from "../../../shared/models/dns-cache.ts";

/** A resolver that answers when told to, counting the questions it was asked. */
function resolver() {
  const asked: string[] = [];
  const waiting: { resolve: (a: LookupAddress[]) => void; reject: (e: Error) => void }[] = [];
  return {
    asked,
    resolve: (hostname: string) => {
      asked.push(hostname);
      return new Promise<LookupAddress[]>((resolve, reject) => waiting.push({ resolve, reject }));
    },
    answer(addresses: LookupAddress[]) {
      for (const w of waiting.splice(0)) w.resolve(addresses);
    },
    fail(code: string) {
      for (const w of waiting.splice(0)) w.reject(Object.assign(new Error(code), { code }));
    },
  };
}

const lookup = (cache: ModelDnsCache, hostname: string, options: { all?: boolean; family?: number } = {}) =>
  new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
    cache.lookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
  );

describe("the model calls' DNS cache", () => {
  it("asks the resolver once for callers that arrive while it is asked, then answers from the cache until the TTL", async () => {
    let now = 0;
    const dns = resolver();
    const cache = new ModelDnsCache(dns.resolve, () => now);
    const callers = Array.from({ length: 32 }, () => lookup(cache, "models.example.com", { all: true }));
    await Promise.resolve();
    expect(dns.asked).toHaveLength(1);
    dns.answer([
      { address: "203.0.113.7", family: 4 },
      { address: "2001:db8::7", family: 6 },
    ]);
    for (const result of await Promise.all(callers)) {
      expect(result.error).toBeNull();
      expect(result.address).toHaveLength(2);
    }
    now += DNS_ANSWER_TTL_MS - 1;
    expect(await lookup(cache, "models.example.com", { family: 6 })).toMatchObject({
      address: "2001:db8::7",
      family: 6,
    });
    expect(await lookup(cache, "models.example.com")).toMatchObject({ address: "203.0.113.7", family: 4 });
    expect(dns.asked).toHaveLength(1);
    now += 1;
    const again = lookup(cache, "models.example.com");
    await Promise.resolve();
    expect(dns.asked).toHaveLength(2);
    dns.answer([{ address: "203.0.113.8", family: 4 }]);
    expect(await again).toMatchObject({ address: "203.0.113.8" });
  });

  it("remembers a name that does not resolve, briefly", async () => {
    let now = 0;
    const dns = resolver();
    const cache = new ModelDnsCache(dns.resolve, () => now);
    const first = lookup(cache, "gone.example.com");
    await Promise.resolve();
    dns.fail("ENOTFOUND");
    expect((await first).error?.code).toBe("ENOTFOUND");
    now += DNS_NEGATIVE_TTL_MS - 1;
    expect((await lookup(cache, "gone.example.com")).error?.code).toBe("ENOTFOUND");
    expect(dns.asked).toHaveLength(1);
    now += 1;
    void lookup(cache, "gone.example.com");
    await Promise.resolve();
    expect(dns.asked).toHaveLength(2);
  });

  it("a resolver that gave up (EAI_AGAIN) is not asked again at once either", async () => {
    const dns = resolver();
    const cache = new ModelDnsCache(dns.resolve, () => 0);
    const first = lookup(cache, "slow.example.com");
    await Promise.resolve();
    dns.fail("EAI_AGAIN");
    expect((await first).error?.code).toBe("EAI_AGAIN");
    expect((await lookup(cache, "slow.example.com")).error?.code).toBe("EAI_AGAIN");
    expect(dns.asked).toHaveLength(1);
  });

  it("an address asked for a family it lacks is ENOTFOUND; an IP address is never looked up", async () => {
    const dns = resolver();
    const cache = new ModelDnsCache(dns.resolve, () => 0);
    const first = lookup(cache, "v4only.example.com", { family: 6 });
    await Promise.resolve();
    dns.answer([{ address: "203.0.113.9", family: 4 }]);
    expect((await first).error?.code).toBe("ENOTFOUND");
    expect(await lookup(cache, "127.0.0.1")).toMatchObject({ error: null, address: "127.0.0.1", family: 4 });
    expect(dns.asked).toEqual(["v4only.example.com"]);
  });
});
