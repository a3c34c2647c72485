import { costLabelsOf } from "../../db/costs.ts";
import type { Queryable } from "../../db/queryable.ts";
import { listTaskUsage, type TokenUsage } from "../../db/tasks.ts";
import type { Budget } from "../../shared/config/types.ts";
import { countGatewayCost } from "../metrics.ts";
import { addSpend, NO_SPEND, type Spend, tokensOf } from "./usage.ts";

/** The budget that is spent, and how much of it. */
export interface Overrun {
  budget: keyof Budget;
  limit: number;
  spent: Spend;
}

/**
 * One invocation's spending as this worker's gateway sees it: what its tasks recorded in the
 * database (read when an attempt starts, and again, without waiting, after each model answer)
 * and what this worker's attempts spent since, by task. A task this worker runs counts by what
 * the gateway saw of it, not by its row, so nothing counts twice. Tasks on other workers count
 * once they end and a read here finds them: the bound is exact for the attempts this worker runs
 * and late by the requests in flight elsewhere (docs/worker.md, "The model gateway").
 */
export class Ledger {
  readonly invocationId: string;
  readonly budget: Budget | undefined;
  readonly #db: Queryable;
  #recorded = new Map<string, Spend>();
  readonly #local = new Map<string, Spend>();
  #reading: Promise<void> | undefined;
  #again = false;
  #labels: ReturnType<typeof costLabelsOf> | undefined;
  /** attempts holding this ledger; when none is left it is dropped after a while */
  holders = 0;

  constructor(db: Queryable, invocationId: string, budget: Budget | undefined) {
    this.#db = db;
    this.invocationId = invocationId;
    this.budget = budget;
  }

  /** The task's running total here, created empty. */
  task(taskId: string): Spend {
    let spend = this.#local.get(taskId);
    if (!spend) {
      spend = { ...NO_SPEND };
      this.#local.set(taskId, spend);
    }
    return spend;
  }

  /**
   * Counts `usd` in `svc_gateway_cost_total` under the run's pipeline and repository, read once
   * per ledger and only for a priced answer: runs on unpriced targets cost no statement. A failed
   * read loses that answer's count (a metric never fails a run) and the next answer reads again.
   */
  countCost(usd: number): void {
    if (!(usd > 0)) return;
    this.#labels ??= costLabelsOf(this.#db, this.invocationId);
    const labels = this.#labels;
    labels.then(
      (found) => countGatewayCost(found, usd),
      () => {
        if (this.#labels === labels) this.#labels = undefined;
      },
    );
  }

  spent(): Spend {
    const total = { ...NO_SPEND };
    for (const [id, spend] of this.#recorded) if (!this.#local.has(id)) addSpend(total, spend);
    for (const spend of this.#local.values()) addSpend(total, spend);
    return total;
  }

  /** The first budget that is spent, if one is: the next model request is refused. */
  overrun(): Overrun | undefined {
    const { budget } = this;
    if (!budget) return undefined;
    const spent = this.spent();
    if (budget.requests !== undefined && spent.requests >= budget.requests)
      return { budget: "requests", limit: budget.requests, spent };
    if (budget.tokens !== undefined && tokensOf(spent) >= budget.tokens)
      return { budget: "tokens", limit: budget.tokens, spent };
    if (budget.cost !== undefined && spent.cost >= budget.cost)
      return { budget: "cost", limit: budget.cost, spent };
    return undefined;
  }

  /** Reads the invocation's recorded usage; concurrent calls share one read and one more after it. */
  refresh(): Promise<void> {
    if (!this.budget) return Promise.resolve();
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        const rows = await listTaskUsage(this.#db, this.invocationId);
        this.#recorded = new Map(rows.map((row) => [row.id, spendOf(row.usage)]));
      } while (this.#again);
    })().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }
}

function spendOf(usage: TokenUsage): Spend {
  const n = (value: unknown) => (typeof value === "number" ? value : 0);
  return {
    input: n(usage.input_tokens),
    output: n(usage.output_tokens),
    cacheRead: n(usage.cache_read_tokens),
    cacheWrite: n(usage.cache_write_tokens),
    // a task recorded before the gateway counted requests made at least one
    requests: usage.requests === undefined ? 1 : n(usage.requests),
    cost: n(usage.cost_usd),
  };
}

export function tokenUsageOf(spend: Spend): TokenUsage {
  return {
    input_tokens: spend.input,
    output_tokens: spend.output,
    cache_read_tokens: spend.cacheRead,
    cache_write_tokens: spend.cacheWrite,
    requests: spend.requests,
    ...(spend.cost > 0 ? { cost_usd: Math.round(spend.cost * 1e6) / 1e6 } : {}),
  };
}

/** `21 tokens (input 20, output 1) over 1 request, $0.000075` */
export function describeSpend(spend: Spend): string {
  const requests = `${spend.requests} model request${spend.requests === 1 ? "" : "s"}`;
  const cost = spend.cost > 0 ? `, $${spend.cost.toFixed(6)}` : "";
  return `${tokensOf(spend)} tokens (input ${spend.input}, output ${spend.output}) over ${requests}${cost}`;
}
