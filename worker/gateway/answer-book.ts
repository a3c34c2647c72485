import type { Queryable } from "../../db/queryable.ts";
import type { RecordedAnswer } from "../../db/recorded-answers.ts";

/** An attempt's model calls, as recorded or replayed: they are numbered in the order they arrive. */
export class AnswerBook {
  readonly mode: "record" | "replay";
  readonly invocationId: string;
  readonly taskId: string;
  /** replay: the live run's answers, in call order */
  readonly answers: readonly RecordedAnswer[];
  readonly db: Queryable;
  #calls = 0;

  constructor(
    db: Queryable,
    spec: { mode: "record" | "replay"; invocationId: string; taskId: string; answers?: RecordedAnswer[] },
  ) {
    this.db = db;
    this.mode = spec.mode;
    this.invocationId = spec.invocationId;
    this.taskId = spec.taskId;
    this.answers = spec.answers ?? [];
  }

  nextCall(): number {
    this.#calls += 1;
    return this.#calls;
  }
}
