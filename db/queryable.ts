import type pg from "pg";

/** A pool, or a client inside a transaction: query modules take either, so callers choose the transaction. */
export type Queryable = pg.Pool | pg.ClientBase;
