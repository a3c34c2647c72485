import { randomUUID } from "node:crypto";
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import pg from "pg";
import { migrate } from "../../../db/migrate.ts";
import type { AgentCliTarget, Budget } from "../../../shared/config/types.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import type { GatewayAccount, Lease } from "../../../worker/gateway/account.ts";
import { ModelGateway } from "../../../worker/gateway/gateway.ts";
import { captureLogger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { waitFor } from "../../support/wait-for.ts";
import { LoopbackModel, type SeenRequest } from "../agents/loopback-model.ts";

/**
 * A model API on loopback whose answers each test writes (`answerWith`), in the API's own shape:
 * the hostile tests need answers the CLI fakes never give (no usage, 9 MiB, cut, extra headers).
 * It records what reached it as the CLI fakes do.
 */
export class ScriptedModelApi extends LoopbackModel {
  answerWith: (request: SeenRequest, response: ServerResponse) => void = (_, response) => {
    response.writeHead(500).end();
  };

  protected keyOf(request: IncomingMessage): string {
    const key = request.headers["x-api-key"];
    return typeof key === "string" ? key : (request.headers.authorization ?? "").replace(/^Bearer /, "");
  }

  protected cwdOf(): string | undefined {
    return undefined;
  }

  protected answer(request: SeenRequest, response: ServerResponse): void {
    this.answerWith(request, response);
  }
}

/** A target of each API on `api`: Anthropic's base URL stops before `/v1`, OpenAI's includes it. */
export function targetOn(
  runtime: "claude-code" | "codex",
  api: ScriptedModelApi,
  name: string = runtime,
): AgentCliTarget {
  const baseUrl = runtime === "codex" ? `${api.url}/v1` : api.url;
  return { name, runtime, model: "m", baseUrl, timeoutMs: 60_000, credentials: [] };
}

/**
 * The worker's real model gateway on loopback, with a real database (the invocation's ledger, the
 * credentials' states) and the worker's logger captured: what an agent's attempt talks to.
 */
export interface GatewayRig {
  url: string;
  pool: pg.Pool;
  /** the worker's log lines, JSON */
  lines: string[];
  /** an attempt's account under `budget` and its lease of `key` on `target`, as the runtimes take them */
  attempt(
    target: AgentCliTarget,
    key: string,
    budget?: Budget,
  ): Promise<{ account: GatewayAccount; lease: Lease }>;
  close(): Promise<void>;
}

export async function openGatewayRig(adminUrl: string): Promise<GatewayRig> {
  const database: TestDatabase = await createTestDatabase(adminUrl);
  const pool = new pg.Pool({ connectionString: database.url, max: 3 });
  await migrate(pool);
  const { logger, lines } = captureLogger();
  const credentials = await CredentialCooldowns.load(pool, logger);
  const gateway = new ModelGateway({ db: pool, credentials, logger });
  const url = await gateway.start();
  const accounts: GatewayAccount[] = [];
  return {
    url,
    pool,
    lines,
    async attempt(target, key, budget) {
      const account = await gateway.account({
        invocationId: `inv_${randomUUID()}`,
        taskId: `tsk_${randomUUID()}`,
        budget,
        onToken: () => {},
      });
      accounts.push(account);
      return { account, lease: account.lease(target, "c0", key) };
    },
    async close() {
      for (const account of accounts) await account.close();
      await gateway.close();
      await pool.end();
      await database.drop();
    },
  };
}

export interface AgentCall {
  status: number;
  /** the answer arrived whole (not cut by either side) */
  complete: boolean;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One model request as an agent sends it through the gateway, with `token` where its API takes a
 * key. `cutAfter`: the agent hangs up once that many bytes of the answer arrived.
 */
export function agentCall(
  gatewayUrl: string,
  token: string,
  call: { path: string; body: unknown; headers?: Record<string, string>; cutAfter?: number },
): Promise<AgentCall> {
  const { hostname, port } = new URL(gatewayUrl);
  const body =
    typeof call.body === "string" || Buffer.isBuffer(call.body) ? call.body : JSON.stringify(call.body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: hostname,
        port,
        method: "POST",
        path: call.path,
        headers: {
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          ...(call.path.startsWith("/v1/messages")
            ? { "x-api-key": token, "anthropic-version": "2023-06-01" }
            : { authorization: `Bearer ${token}` }),
          ...call.headers,
        },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          resolve({
            status: incoming.statusCode ?? 0,
            complete: incoming.complete,
            headers: incoming.headers,
            text: Buffer.concat(chunks).toString("utf8"),
          });
        incoming.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (call.cutAfter !== undefined && size >= call.cutAfter) {
            outgoing.destroy();
            done();
          }
        });
        incoming.on("end", done);
        // a cut answer ends without "end": the agent has what it got
        incoming.on("close", done);
        incoming.on("error", () => {});
      },
    );
    outgoing.on("error", (error) => {
      if (call.cutAfter === undefined) reject(error);
    });
    outgoing.end(body);
  });
}

/** Server-sent events as the APIs write them; `event:` lines only where the API names its events. */
export function sse(events: Record<string, unknown>[], named = true): string {
  return events
    .map(
      (event) => `${named && event.type ? `event: ${event.type}\n` : ""}data: ${JSON.stringify(event)}\n\n`,
    )
    .join("");
}

/** The worker's log line of `event` about `invocation`, once written (a cut answer settles after the agent left). */
export function logged(lines: string[], event: string, invocation: string): Promise<Record<string, unknown>> {
  return waitFor(async () => {
    for (const text of lines) {
      const line = JSON.parse(text) as Record<string, unknown>;
      if (line.event === event && line.invocation === invocation) return line;
    }
    return undefined;
  }, `the log line ${event} of ${invocation}`);
}
