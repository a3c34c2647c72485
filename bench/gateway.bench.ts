/**
 * The model gateway's cost (`node bench/gateway.bench.ts`): the same streamed model request to the
 * same loopback Anthropic Messages API, sent directly and through the worker's gateway (in this
 * process, as the worker runs it: token lookup, credential added, the stream piped back while its
 * usage is read). Each sample is a pair, one right after the other, so the machine's load weighs
 * on both alike; both use kept-alive connections, as the CLIs do. Figures: the median of each
 * path, and the median of the per-pair differences, for the whole answer and for its first byte.
 * Target: at most 1 ms added at p50, to the answer and to the first streamed byte.
 */
import { Agent, request } from "node:http";
import { loadavg } from "node:os";
import type { Queryable } from "../db/queryable.ts";
import type { AgentCliTarget } from "../shared/config/types.ts";
import { createLogger } from "../shared/logger.ts";
import { FakeAnthropic } from "../test/e2e/agents/fake-anthropic.ts";
import { ModelGateway } from "../worker/gateway/gateway.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1000);
const WARMUP = 100;
const KEY = "bench-real-key";
const now = () => performance.now();

const fake = new FakeAnthropic();
await fake.start();
fake.behave(KEY, { kind: "script", note: { title: "t", body: "b" }, result: { summary: "done" } });
// no budget: the gateway never reads the database in this bench
const noDatabase = {
  query: () => Promise.reject(new Error("no database in this bench")),
} as unknown as Queryable;
const credentials = { markDead: async () => {}, markCooling: async () => {} };
const logger = createLogger({ role: "worker", format: "json", level: "error" });
const gateway = new ModelGateway({ db: noDatabase, credentials, logger });
const gatewayUrl = await gateway.start();
const target: AgentCliTarget = {
  ...{ name: "bench", runtime: "claude-code", model: "claude-sonnet-4-5", timeoutMs: 60_000 },
  baseUrl: fake.url,
  credentials: [{ name: "c", secret: { kind: "inline", value: KEY } }],
};
const account = await gateway.account({
  invocationId: "inv_bench",
  taskId: "task_bench",
  budget: undefined,
  onToken: () => {},
});
const lease = account.lease(target, "c", KEY);

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const BODY = JSON.stringify({
  model: "claude-sonnet-4-5",
  max_tokens: 64,
  stream: true,
  messages: [{ role: "user", content: "Summarise the change." }],
});

/** One streamed request: ms to the first body byte and to the answer's end. */
function call(base: string, key: string): Promise<{ first: number; total: number }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const start = now();
    let first = 0;
    const outgoing = request(
      {
        host: hostname,
        port,
        method: "POST",
        path: "/v1/messages?beta=true",
        agent,
        headers: { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" },
      },
      (incoming) => {
        incoming.on("data", () => {
          if (!first) first = now() - start;
        });
        incoming.on("end", () => resolve({ first, total: now() - start }));
      },
    );
    outgoing.on("error", reject);
    outgoing.end(BODY);
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const direct = { first: [] as number[], total: [] as number[] };
const through = { first: [] as number[], total: [] as number[] };
const added = { first: [] as number[], total: [] as number[] };
for (let i = 0; i < WARMUP + SAMPLES; i++) {
  // alternate which goes first, so neither always meets a warmer machine
  const pair =
    i % 2 === 0
      ? [await call(fake.url, KEY), await call(gatewayUrl, lease.token)]
      : [await call(gatewayUrl, lease.token), await call(fake.url, KEY)].reverse();
  const [plain, proxied] = pair as [{ first: number; total: number }, { first: number; total: number }];
  if (i < WARMUP) continue;
  direct.first.push(plain.first);
  direct.total.push(plain.total);
  through.first.push(proxied.first);
  through.total.push(proxied.total);
  added.first.push(proxied.first - plain.first);
  added.total.push(proxied.total - plain.total);
}
const ms = (value: number) => `${value.toFixed(3)} ms`;
console.log(
  `gateway bench: ${SAMPLES} pairs of streamed /v1/messages requests (load ${loadavg()[0]!.toFixed(2)})`,
);
console.log(
  `  whole answer:  direct p50 ${ms(median(direct.total))}, through the gateway p50 ${ms(median(through.total))}`,
);
console.log(
  `                 added p50 ${ms(median(added.total))} (ratio ${(median(through.total) / median(direct.total)).toFixed(2)}×; target ≤ 1 ms added)`,
);
console.log(
  `  first byte:    direct p50 ${ms(median(direct.first))}, through the gateway p50 ${ms(median(through.first))}`,
);
console.log(
  `                 added p50 ${ms(median(added.first))} (ratio ${(median(through.first) / median(direct.first)).toFixed(2)}×; target ≤ 1 ms added)`,
);
const spend = await account.close();
console.log(
  `  the gateway read ${spend.requests} requests, ${spend.input} input and ${spend.output} output tokens`,
);
agent.destroy();
await gateway.close();
await fake.stop();
