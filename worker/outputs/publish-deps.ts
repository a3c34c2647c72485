import type pg from "pg";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";

/** What publishing needs of the worker. */
export interface PublishDeps {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
}
