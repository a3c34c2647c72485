import { describe, expect, it } from "vitest";
import { account, checkAccepted, printLine, summary, timed, waitForQuiet } from "./support/accounting.ts";
import { drillEnv, SECRETS } from "./support/config.ts";
import {
  bearerRequest,
  burst,
  codehostRequest,
  hmacHex,
  isStatus,
  type Outcome,
  type Planned,
  tally,
  trackerRequest,
  type WebhookRequest,
} from "./support/load.ts";
import { type IngressProcess, startIngress, startWorker } from "./support/processes.ts";
import { startReverseProxy } from "./support/proxy.ts";
import { useDrillStack } from "./support/stack.ts";

const DRILL = "mixed-5000";
const TOTAL = 5_000;
const CONCURRENCY = 32;

/** A seeded generator, so a failing mix can be replayed exactly (DRILL_SEED). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Plan {
  requests: Planned[];
  /** requests expected to be accepted (202), by kind; each original fires `fires` invocations */
  originals: { kind: string; deliveryId?: string; fires: number }[];
  duplicates: number;
  rejected: { kind: string; expected: number }[];
}

function withKind(kind: string, request: WebhookRequest): WebhookRequest {
  return { ...request, kind };
}

/**
 * 5,000 requests, shuffled: valid bearer (firing and not firing), codehost (push fires, issues
 * does not), tracker (Issue.create fires, Comment.create does not), redeliveries of earlier
 * delivery ids, bad signatures of every kind, and authentic requests with bad bodies. Every
 * rejected request carries a `rej-` marker in its delivery id and body, so its absence can be
 * checked in the database.
 */
function plan(seed: number): Plan {
  const random = prng(seed);
  const requests: Planned[] = [];
  const originals: Plan["originals"] = [];
  const rejected = new Map<string, number>();
  const reject = (kind: string, planned: Planned) => {
    requests.push(planned);
    rejected.set(kind, (rejected.get(kind) ?? 0) + 1);
  };
  const redeliverable: (() => WebhookRequest)[] = [];
  const { DRILL_TOKEN: token, DRILL_CODEHOST_SECRET: ghSecret, DRILL_TRACKER_SECRET: linSecret } = SECRETS;

  for (let i = 0; i < 1_800; i++) {
    const id = `hook-${seed}-${i}`;
    const make = () => bearerRequest("hook", token, { n: i, note: "fires on-hook" }, id);
    requests.push(make);
    redeliverable.push(() => withKind("duplicate", make()));
    originals.push({ kind: "bearer", deliveryId: id, fires: 1 });
  }
  for (let i = 0; i < 300; i++) {
    requests.push(bearerRequest("quiet", token, { n: i }));
    originals.push({ kind: "bearer", fires: 0 });
  }
  for (let i = 0; i < 600; i++) {
    const id = `gh-push-${seed}-${i}`;
    const make = () =>
      codehostRequest(
        "gh",
        ghSecret,
        "push",
        { ref: "refs/heads/main", after: `${i}`.padStart(40, "0") },
        id,
      );
    requests.push(make);
    redeliverable.push(() => withKind("duplicate", make()));
    originals.push({ kind: "codehost", deliveryId: id, fires: 1 });
  }
  for (let i = 0; i < 300; i++) {
    const id = `gh-issues-${seed}-${i}`;
    requests.push(() =>
      codehostRequest("gh", ghSecret, "issues", { action: "opened", issue: { number: i } }, id),
    );
    originals.push({ kind: "codehost", deliveryId: id, fires: 0 });
  }
  for (let i = 0; i < 500; i++) {
    const id = `lin-issue-${seed}-${i}`;
    const make = () =>
      trackerRequest("lin", linSecret, { type: "Issue", action: "create", data: { n: i } }, id);
    requests.push(make);
    redeliverable.push(() => withKind("duplicate", make()));
    originals.push({ kind: "tracker", deliveryId: id, fires: 1 });
  }
  for (let i = 0; i < 200; i++) {
    const id = `lin-comment-${seed}-${i}`;
    requests.push(() =>
      trackerRequest("lin", linSecret, { type: "Comment", action: "create", data: { n: i } }, id),
    );
    originals.push({ kind: "tracker", deliveryId: id, fires: 0 });
  }
  const duplicates = 500;
  for (let i = 0; i < duplicates; i++)
    requests.push(redeliverable[Math.floor(random() * redeliverable.length)]!);

  // bad signatures: 400, each answered 401
  for (let i = 0; i < 400; i++) {
    const marker = `rej-sig-${seed}-${i}`;
    const variant = i % 6;
    if (variant === 0)
      reject(
        "bad-sig:bearer-wrong-token",
        withKind("bad-sig", bearerRequest("hook", `${token}x`, { marker }, marker)),
      );
    else if (variant === 1)
      reject(
        "bad-sig:no-such-route",
        withKind("bad-sig", bearerRequest(`nope-${i}`, token, { marker }, marker)),
      );
    else if (variant === 2) {
      const good = codehostRequest("gh", ghSecret, "push", { marker }, marker);
      reject(
        "bad-sig:codehost",
        withKind("bad-sig", {
          ...good,
          headers: { ...good.headers, "x-hub-signature-256": `sha256=${hmacHex("wrong", good.body)}` },
        }),
      );
    } else if (variant === 3) {
      reject("bad-sig:tracker", () => {
        const good = trackerRequest("lin", linSecret, { type: "Issue", action: "create", marker }, marker);
        return withKind("bad-sig", {
          ...good,
          headers: { ...good.headers, "linear-signature": hmacHex("wrong", good.body) },
        });
      });
    } else if (variant === 4) {
      // authentic signature, but a timestamp five minutes old: a replayed capture
      reject("bad-sig:tracker-stale", () =>
        withKind(
          "bad-sig",
          trackerRequest(
            "lin",
            linSecret,
            { type: "Issue", action: "create", marker, webhookTimestamp: Date.now() - 300_000 },
            marker,
          ),
        ),
      );
    } else {
      const good = codehostRequest("gh", ghSecret, "push", { marker }, marker);
      const { "x-hub-signature-256": _, ...unsigned } = good.headers;
      reject("bad-sig:codehost-unsigned", withKind("bad-sig", { ...good, headers: unsigned }));
    }
  }
  // bad bodies from authentic callers: 400 (or 415 for the media type), never stored
  for (let i = 0; i < 400; i++) {
    const marker = `rej-body-${seed}-${i}`;
    const variant = i % 7;
    if (variant === 0) {
      const body = Buffer.from(`{"marker": "${marker}", "broken": `);
      reject("bad-body:bearer-invalid-json", {
        kind: "bad-body",
        path: "/webhooks/hook",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          "idempotency-key": marker,
        },
        body,
      });
    } else if (variant === 1) {
      const good = bearerRequest("hook", token, { marker }, marker);
      reject(
        "bad-body:bearer-text-plain",
        withKind("bad-body", { ...good, headers: { ...good.headers, "content-type": "text/plain" } }),
      );
    } else if (variant === 2) {
      const body = Buffer.from(`[{"marker": "${marker}"`);
      reject("bad-body:codehost-invalid-json", {
        kind: "bad-body",
        path: "/webhooks/gh",
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-github-delivery": marker,
          "x-hub-signature-256": `sha256=${hmacHex(ghSecret, body)}`,
        },
        body,
      });
    } else if (variant === 3) {
      const good = codehostRequest("gh", ghSecret, "push", { marker }, marker);
      const { "x-github-event": _, ...noEvent } = good.headers;
      reject("bad-body:codehost-no-event", withKind("bad-body", { ...good, headers: noEvent }));
    } else if (variant === 4) {
      reject("bad-body:tracker-no-type", () =>
        withKind("bad-body", trackerRequest("lin", linSecret, { action: "create", marker }, marker)),
      );
    } else if (variant === 5) {
      reject(
        "bad-body:bearer-nul-char",
        withKind("bad-body", bearerRequest("hook", token, { marker, text: "a\u0000b" }, marker)),
      );
    } else {
      reject(
        "bad-body:bearer-key-too-long",
        withKind("bad-body", {
          ...bearerRequest("hook", token, { marker }),
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${token}`,
            "idempotency-key": `${marker}-${"k".repeat(300)}`,
          },
        }),
      );
    }
  }
  // shuffle (Fisher-Yates, seeded)
  for (let i = requests.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [requests[i], requests[j]] = [requests[j]!, requests[i]!];
  }
  return {
    requests,
    originals,
    duplicates,
    rejected: [...rejected].map(([kind, expected]) => ({ kind, expected })),
  };
}

const EXPECTED_STATUS: Record<string, number[]> = {
  bearer: [202],
  codehost: [202],
  tracker: [202],
  duplicate: [202],
  "bad-sig": [401],
  "bad-body": [400, 415],
};

describe("drill: two ingress replicas and two workers under 5,000 mixed webhooks", () => {
  const stack = useDrillStack({ concurrency: 4 });

  it("counts match exactly, duplicates are stored once, rejected requests leave no record", async () => {
    await timed(DRILL, async () => {
      const { database, pool, dir, processes } = stack;
      const seed = Number(process.env.DRILL_SEED ?? 20_260_601);
      const env = drillEnv(dir, database.url);
      const ingresses: IngressProcess[] = [];
      for (const name of ["ingress-a", "ingress-b"]) ingresses.push(await startIngress(name, env));
      processes.push(...ingresses);
      for (const name of ["worker-a", "worker-b"]) processes.push(await startWorker(name, env));
      const proxy = await startReverseProxy(ingresses.map((i) => i.url));
      stack.proxy = proxy;

      const mix = plan(seed);
      expect(mix.requests.length).toBe(TOTAL);
      const started = Date.now();
      const outcomes = await burst(proxy.url, mix.requests, {
        concurrency: CONCURRENCY,
        deadline: started + 240_000,
      });
      const seconds = (Date.now() - started) / 1000;
      printLine(DRILL, "sent", {
        requests: outcomes.length,
        seconds: seconds.toFixed(1),
        per_second: (outcomes.length / seconds).toFixed(0),
        seed,
      });
      printLine(DRILL, "answers", tally(outcomes));
      printLine(DRILL, "proxy", {
        per_upstream: proxy.counts.perUpstream,
        bad_gateway: proxy.counts.badGateway,
        upstream_errors: proxy.counts.errors,
      });
      expect(outcomes.length).toBe(TOTAL);

      // every request got the answer its kind calls for: no 5xx, no transport error
      const unexpected = outcomes.filter(
        (o) => !("status" in o) || !(EXPECTED_STATUS[o.request.kind] ?? []).includes(o.status),
      );
      expect(
        unexpected
          .map((o) => `${o.request.kind} ${"status" in o ? `${o.status} ${o.body.slice(0, 120)}` : o.error}`)
          .slice(0, 10),
      ).toEqual([]);
      const accepted = outcomes.filter((o): o is Extract<Outcome, { status: number }> => isStatus(o, 202));
      const ids = accepted.map((o) => o.trigger!);
      // a delivery id answered twice names one trigger
      const byDelivery = new Map<string, Set<string>>();
      for (const o of accepted) {
        if (!o.request.deliveryId) continue;
        const key = `${o.request.path} ${o.request.deliveryId}`;
        byDelivery.set(key, (byDelivery.get(key) ?? new Set()).add(o.trigger!));
      }
      const split = [...byDelivery].filter(([, set]) => set.size !== 1);
      expect(split).toEqual([]);

      const expectedTriggers = mix.originals.length;
      const expectedInvocations = mix.originals.reduce((sum, o) => sum + o.fires, 0);
      expect(accepted.length).toBe(expectedTriggers + mix.duplicates);
      expect(new Set(ids).size).toBe(expectedTriggers);

      const quiet = await waitForQuiet(
        pool,
        300_000,
        processes.filter((p) => p.role === "worker"),
      );
      const stored = await checkAccepted(pool, ids);
      const leftovers = Number(
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM svc.triggers WHERE delivery_id LIKE 'rej-%' OR payload::text LIKE '%rej-%'",
          )
        ).rows[0].n,
      );
      const perDelivery = Number(
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM (SELECT source, delivery_id FROM svc.triggers WHERE delivery_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d",
          )
        ).rows[0].n,
      );
      printLine(DRILL, "accounting", {
        sent: outcomes.length,
        accepted_202: accepted.length,
        distinct_trigger_ids: stored.distinct,
        duplicates_sent: mix.duplicates,
        rejected_sent: mix.rejected.reduce((s, r) => s + r.expected, 0),
        rejected_records: leftovers,
        delivery_ids_stored_twice: perDelivery,
        expected_triggers: expectedTriggers,
        expected_invocations: expectedInvocations,
        stored_202_ids: stored.stored,
        stored_with_one_job: stored.withOneJob,
        ...summary(quiet),
      });

      expect(stored.missing).toEqual([]);
      expect(stored.stored).toBe(expectedTriggers);
      expect(stored.withOneJob).toBe(expectedTriggers);
      expect(leftovers).toBe(0);
      expect(perDelivery).toBe(0);
      expect(quiet.triggers).toBe(expectedTriggers);
      expect(quiet.dispatchJobs).toBe(expectedTriggers);
      expect(quiet.orphanJobs).toBe(0);
      expect(quiet.triggersWithoutOneJob).toBe(0);
      expect(quiet.workloads).toBe(expectedInvocations);
      expect(quiet.invocations).toBe(expectedInvocations);
      expect(quiet.invocationsByStatus).toEqual({ completed: expectedInvocations });
      expect(quiet.triggersByStatus).toEqual({ completed: expectedTriggers });
      expect(quiet.dispatchJobsByState).toEqual({ completed: expectedTriggers });
      // both replicas served, and both workers ran invocations
      expect(proxy.counts.perUpstream.every((n) => n > 1_000)).toBe(true);
      const perWorker = await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM svc.invocations GROUP BY worker_id",
      );
      expect(perWorker.rows.length).toBe(2);
      for (const p of processes) expect(p.alive(), `${p.name} still running`).toBe(true);
      const after = await account(pool);
      expect(after.triggers).toBe(expectedTriggers);
    });
  });
});
