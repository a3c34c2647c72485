/**
 * The baseline of bench/ingress.bench.ts: a bare Express 5 + pg handler doing the same two inserts
 * in one transaction (the trigger row and the dispatch job), with no verification, no logging and
 * no pg-boss. Run as its own process: `node bench/support/bare-ingress.ts <databaseUrl> <poolSize>`;
 * prints `{"port":N}` once listening.
 */
import express from "express";
import pg from "pg";
import { newId } from "../../shared/ids.ts";
import { DISPATCH_QUEUE } from "../../shared/queues.ts";

const [databaseUrl, poolSize] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: databaseUrl, max: Number(poolSize) });
const app = express();
app.use(express.json({ limit: "1mb" }));
app.post("/webhooks/:name", async (req, res) => {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const id = newId("trigger");
    await client.query(
      `INSERT INTO svc.triggers (id, kind, source, event_name, payload) VALUES ($1, 'webhook', $2, $2, $3)`,
      [id, req.params.name, req.body],
    );
    await client.query("INSERT INTO pgboss.job (name, data) VALUES ($1, $2)", [
      DISPATCH_QUEUE,
      { triggerId: id },
    ]);
    await client.query("COMMIT");
    res.status(202).json({ trigger: id });
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    res.status(503).json({ error: String(error) });
  } finally {
    client.release();
  }
});
const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
});
process.on("SIGTERM", () => {
  server.close();
  void pool.end();
});
