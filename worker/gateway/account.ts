import { randomBytes } from "node:crypto";
import type { Budget, Target } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import type { AnswerBook } from "./answer-book.ts";
import { apiOf } from "./apis.ts";
import { describeSpend, type Ledger, type Overrun } from "./ledger.ts";
import { addSpend, NO_SPEND, type Spend } from "./usage.ts";

/** What the gateway decided about a lease's credential from the model API's answer. */
export interface Refusal {
  kind: "dead" | "cooling";
  reason: string;
}

/**
 * One credential of one attempt, behind a gateway token: the token maps to the target (where to
 * forward) and the credential (what to add on the way out). It dies with its attempt.
 */
export interface Lease {
  readonly token: string;
  readonly account: GatewayAccount;
  readonly target: Exclude<Target, { runtime: "command" }>;
  readonly credential: string;
  readonly key: string;
  readonly api: ReturnType<typeof apiOf>;
  /** set when an answer refused the credential (worker/gateway/verdict.ts) */
  refusal?: Refusal;
}

/** How an account registers its tokens with the gateway that serves them. */
export interface LeaseRegistry {
  add(lease: Lease): void;
  remove(token: string): void;
  release(ledger: Ledger): void;
}

/**
 * One agent attempt's standing at the gateway: its leases (one per credential tried), what it
 * spent, and the budget's verdict. When a budget is spent the gateway refuses the next model
 * request and aborts `signal`, which stops the agent's process.
 */
export class GatewayAccount {
  readonly taskId: string;
  readonly ledger: Ledger;
  /** what this attempt spent */
  readonly spend: Spend = { ...NO_SPEND };
  /** its model answers recorded, or replayed from a recording (recording.ts); undefined: neither */
  answers: AnswerBook | undefined;
  readonly #registry: LeaseRegistry;
  readonly #leases: Lease[] = [];
  readonly #stop = new AbortController();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #onToken: (token: string) => void;
  #overrun: Overrun | undefined;
  #target: string | undefined;
  #closed = false;

  constructor(registry: LeaseRegistry, ledger: Ledger, taskId: string, onToken: (token: string) => void) {
    this.#registry = registry;
    this.ledger = ledger;
    this.taskId = taskId;
    this.#onToken = onToken;
  }

  get budget(): Budget | undefined {
    return this.ledger.budget;
  }

  /** Aborted when the gateway refused a request for the budget: the agent is stopped. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** A new gateway token for `credential` of `target`, valid until the attempt ends. */
  lease(target: Lease["target"], credential: string, key: string): Lease {
    if (this.#closed) throw new Error("the attempt's gateway account is closed");
    const token = `svcgw_${randomBytes(24).toString("base64url")}`;
    const lease: Lease = { token, account: this, target, credential, key, api: apiOf(target) };
    this.#target = target.name;
    this.#leases.push(lease);
    this.#onToken(token);
    this.#registry.add(lease);
    return lease;
  }

  /** Adds an answer's spend to the attempt and to the invocation's running total. */
  record(spend: Spend): void {
    addSpend(this.spend, spend);
    addSpend(this.ledger.task(this.taskId), spend);
    this.ledger.countCost(spend.cost);
  }

  /** The spent budget, checked before a model request starts; it stops the attempt. */
  refuse(overrun: Overrun): void {
    this.#overrun ??= overrun;
    this.#stop.abort();
  }

  /** The budget that stopped the attempt: its `budget_exceeded` diagnostic. */
  exceeded(): Diagnostic | undefined {
    const overrun = this.#overrun;
    if (!overrun) return undefined;
    return budgetExceeded(overrun, this.#target);
  }

  /** A write the attempt's end waits for (a credential's new state). */
  track(work: Promise<unknown>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  /** Ends the attempt: its tokens die (a late request gets 401) and what it caused is written. */
  async close(): Promise<Spend> {
    if (!this.#closed) {
      this.#closed = true;
      for (const lease of this.#leases) this.#registry.remove(lease.token);
      this.#registry.release(this.ledger);
    }
    await Promise.allSettled([...this.#pending]);
    return this.spend;
  }
}

const UNIT: Record<keyof Budget, (value: number) => string> = {
  tokens: (value) => `${value} tokens`,
  requests: (value) => `${value} model requests`,
  cost: (value) => `$${value}`,
};

/** `budget_exceeded`: which budget, its limit, and what the invocation used. */
export function budgetExceeded(overrun: Overrun, target: string | undefined): Diagnostic {
  const { budget, limit, spent } = overrun;
  return diagnostic(
    "budget_exceeded",
    `the invocation spent its budget.${budget} of ${UNIT[budget](limit)}: it used ${describeSpend(spent)}; the agent${target ? ` on target ${target}` : ""} was stopped at its next model request`,
    {
      ...(target ? { target } : {}),
      field: `budget.${budget}`,
      metadata: {
        budget,
        limit,
        used: {
          tokens: spent.input + spent.output,
          input_tokens: spent.input,
          output_tokens: spent.output,
          requests: spent.requests,
          cost_usd: Math.round(spent.cost * 1e6) / 1e6,
        },
      },
    },
  );
}
