import type pg from "pg";

/**
 * Runs `work` on one client inside BEGIN/COMMIT; any throw rolls everything back.
 *
 * While a client is checked out, pg-pool removes its own 'error' listener, so a connection the
 * server terminates between two statements (a restart, a failover) would be an unhandled 'error'
 * event and end the process. We listen for as long as we hold the client, and a client whose
 * connection failed is destroyed rather than handed to the next caller.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return inTransaction(pool, "BEGIN", (client) => work(client));
}

async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  work: (client: pg.PoolClient, begun: pg.QueryResult) => Promise<T>,
): Promise<T> {
  return withClient(pool, async (client, broken) => {
    try {
      const begun = await client.query(begin);
      const result = await work(client, begun);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(broken);
      throw error;
    }
  });
}

/**
 * Runs `work` on one pooled client outside any transaction, with the same care for a connection
 * lost meanwhile as withTransaction: the client is destroyed, not handed to the next caller, when
 * its connection failed or `work` calls `broken`.
 */
export async function withClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, broken: () => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on("error", onError);
  let broken = false;
  try {
    return await work(client, () => {
      broken = true;
    });
  } catch (error) {
    broken ||= isConnectionError(error);
    throw error;
  } finally {
    client.off("error", onError);
    client.release(lost ?? broken);
  }
}

/** Errors that say the connection, not the statement, failed: no SQLSTATE, class 08 or 57. */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith("08") || code.startsWith("57")
  );
}

/**
 * Runs `work` under a savepoint of the caller's transaction: its statements are kept when it
 * returns, and undone alone when it throws (the error is thrown on), the rest of the transaction
 * going on.
 */
export async function withSavepoint<T>(
  client: pg.ClientBase,
  name: string,
  work: () => Promise<T>,
): Promise<T> {
  await client.query(`SAVEPOINT ${name}`);
  try {
    const result = await work();
    await client.query(`RELEASE SAVEPOINT ${name}`);
    return result;
  } catch (error) {
    await client.query(`ROLLBACK TO SAVEPOINT ${name}`);
    throw error;
  }
}
