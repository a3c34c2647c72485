import { rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { writeDrillConfig } from "../drills/support/config.ts";
import { type IngressProcess, startIngress } from "../drills/support/processes.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/**
 * Contract, Authentication: a route without a source rejects every request exactly as a wrong
 * token does, so a caller cannot learn which names exist. Here: many interleaved samples of the
 * 401 latency for an existing name with a wrong token and for a name that does not exist, compared
 * with a two-sample Kolmogorov–Smirnov test and a bootstrap confidence interval of the median of
 * the paired differences. A positive control (the same samples shifted by a tenth of the median) shows that the
 * test would see a difference of that size.
 */

const WARMUP_PAIRS = Number(process.env.SVC_TIMING_WARMUP ?? 400);
const PAIRS = Number(process.env.SVC_TIMING_PAIRS ?? 2_500);
/** indistinguishable: the KS test does not reject at this level … */
const KS_ALPHA = 0.001;
/** … and the 99% bootstrap interval of the median paired difference lies within ± this share of the median */
const EQUIVALENCE_SHARE = 0.1;
const TOKEN = "timing-token-5e1f7a";
// equal lengths, so the two requests carry the same number of bytes
const EXISTING = "alpha-hook";
const MISSING = "omega-hook";
const WRONG = "timing-token-5e1f7b";

function once(agent: Agent, url: string, name: string): Promise<{ status: number; micros: number }> {
  const body = '{"probe":true}';
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = request(`${url}/webhooks/${name}`, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": body.length,
        authorization: `Bearer ${WRONG}`,
      },
    });
    req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
    req.on("response", (res) => {
      res.resume();
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, micros: Number(process.hrtime.bigint() - started) / 1_000 }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Two-sample Kolmogorov–Smirnov statistic D and its asymptotic p-value (Stephens' small-sample correction). */
function kolmogorovSmirnov(a: number[], b: number[]): { d: number; p: number } {
  const x = [...a].sort((p, q) => p - q);
  const y = [...b].sort((p, q) => p - q);
  let i = 0;
  let j = 0;
  let d = 0;
  while (i < x.length && j < y.length) {
    const value = Math.min(x[i]!, y[j]!);
    while (i < x.length && x[i]! <= value) i++;
    while (j < y.length && y[j]! <= value) j++;
    d = Math.max(d, Math.abs(i / x.length - j / y.length));
  }
  const ne = (x.length * y.length) / (x.length + y.length);
  const lambda = (Math.sqrt(ne) + 0.12 + 0.11 / Math.sqrt(ne)) * d;
  let p = 0;
  for (let k = 1; k <= 100; k++) p += 2 * (-1) ** (k - 1) * Math.exp(-2 * k * k * lambda * lambda);
  return { d, p: Math.min(1, Math.max(0, p)) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((p, q) => p - q);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Percentile bootstrap interval of the median of the paired differences (existing minus missing,
 * the two requests of one pair sent back to back), with a seeded generator. Pairing cancels the
 * load of the moment, which both requests of a pair share.
 */
function bootstrapPairedMedian(differences: number[], rounds: number, level: number): [number, number] {
  let state = 0x5eed;
  const random = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 4_294_967_296;
  };
  const resample = (values: number[]) => values.map(() => values[Math.floor(random() * values.length)]!);
  const medians: number[] = [];
  for (let round = 0; round < rounds; round++) medians.push(median(resample(differences)));
  medians.sort((p, q) => p - q);
  const tail = (1 - level) / 2;
  return [medians[Math.floor(tail * rounds)]!, medians[Math.ceil((1 - tail) * rounds) - 1]!];
}

describe("timing side channel of webhook 401s", () => {
  let database: TestDatabase;
  let dir: string;
  let ingress: IngressProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeDrillConfig();
    // one more bearer source: the existing name of this test
    const { appendFile, readFile, writeFile } = await import("node:fs/promises");
    const daemon = await readFile(`${dir}/daemon.yaml`, "utf8");
    await writeFile(
      `${dir}/daemon.yaml`,
      daemon.replace("  sources:\n", `  sources:\n    ${EXISTING}: { verify: bearer, secret: "${TOKEN}" }\n`),
    );
    await appendFile(`${dir}/daemon.yaml`, "");
    ingress = await startIngress("timing-ingress", {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/",
      SVC_LOG_FORMAT: "json",
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: database.url,
      DRILL_TOKEN: "x",
      DRILL_CODEHOST_SECRET: "x",
      DRILL_TRACKER_SECRET: "x",
    });
  });
  afterAll(async () => {
    await ingress?.stop("SIGKILL", 5_000);
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("an existing name with a wrong token and a nonexistent name answer 401 in indistinguishable time", {
    timeout: 120_000,
  }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const existing: number[] = [];
    const missing: number[] = [];
    const paired: number[] = [];
    const statuses = new Set<number>();
    const deadline = Date.now() + 90_000;
    let order = 0x2545f491;
    try {
      for (let pair = 0; pair < WARMUP_PAIRS + PAIRS && Date.now() < deadline; pair++) {
        // interleaved, in a pseudo-random order within each pair, so drift hits both alike
        order ^= order << 13;
        order ^= order >>> 17;
        order ^= order << 5;
        const first = order & 1 ? EXISTING : MISSING;
        const second = first === EXISTING ? MISSING : EXISTING;
        const one = await once(agent, ingress!.url, first);
        const two = await once(agent, ingress!.url, second);
        statuses.add(one.status).add(two.status);
        if (pair < WARMUP_PAIRS) continue;
        (first === EXISTING ? existing : missing).push(one.micros);
        (second === EXISTING ? existing : missing).push(two.micros);
        paired.push(first === EXISTING ? one.micros - two.micros : two.micros - one.micros);
      }
    } finally {
      agent.destroy();
    }
    expect([...statuses]).toEqual([401]);
    expect(existing.length).toBeGreaterThanOrEqual(1_000);
    expect(missing.length).toBe(existing.length);

    const ks = kolmogorovSmirnov(existing, missing);
    const medianExisting = median(existing);
    const medianMissing = median(missing);
    const pooled = median([...existing, ...missing]);
    const [low, high] = bootstrapPairedMedian(paired, 1_000, 0.99);
    const margin = EQUIVALENCE_SHARE * pooled;
    // positive control: the same samples with a shift of a tenth of the median must be told apart
    const control = kolmogorovSmirnov(
      existing.map((v) => v + margin),
      missing,
    );
    process.stdout.write(
      `[timing] samples=${existing.length}+${missing.length} median_existing_us=${medianExisting.toFixed(1)} ` +
        `median_missing_us=${medianMissing.toFixed(1)} ks_D=${ks.d.toFixed(4)} ks_p=${ks.p.toFixed(4)} (alpha ${KS_ALPHA}) ` +
        `paired_median_diff_us=${median(paired).toFixed(1)} 99ci_us=[${low.toFixed(1)}, ${high.toFixed(1)}] equivalence_margin_us=±${margin.toFixed(1)} ` +
        `control_shift_us=${margin.toFixed(1)} control_ks_D=${control.d.toFixed(4)} control_ks_p=${control.p.toExponential(2)}\n`,
    );
    expect(control.p, "the test can see a shift of a tenth of the median").toBeLessThan(KS_ALPHA);
    expect(ks.p, "the KS test tells the two 401 latency distributions apart").toBeGreaterThan(KS_ALPHA);
    expect(low).toBeGreaterThan(-margin);
    expect(high).toBeLessThan(margin);
  });
});
