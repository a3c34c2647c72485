/**
 * The WHERE clause of a filtered listing, built one condition at a time: each value becomes the
 * next `$n` parameter, so no filter value is ever spliced into SQL text.
 */
export class Conditions {
  readonly params: unknown[] = [];
  readonly #clauses: string[] = [];

  /** Adds `clause($n)` with `value` as parameter $n. */
  add(clause: (placeholder: string) => string, value: unknown): void {
    this.#clauses.push(clause(this.param(value)));
  }

  /** `value` as the next parameter, for a placeholder outside the WHERE clause (LIMIT). */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** `WHERE a AND b`, or nothing when no condition was added. */
  where(): string {
    return this.#clauses.length ? `WHERE ${this.#clauses.join(" AND ")}` : "";
  }
}
