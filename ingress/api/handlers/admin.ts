import { readServerVersion } from "../../../db/connect.ts";
import { listDeadCredentials } from "../../../db/credential-cooldowns.ts";
import {
  clearDrain,
  type GatewayState,
  listGateways,
  readDrain,
  setDrain,
} from "../../../db/daemon-state.ts";
import { appliedMigrationVersions, listMigrations } from "../../../db/migrate.ts";
import { countFailedSince, purgeFailedJobs } from "../../../db/queue-jobs.ts";
import { reconcileQueue } from "../../../db/reconcile-queue.ts";
import { parseDuration } from "../../../shared/config/duration.ts";
import { unknownScopes } from "../../../shared/scopes.ts";
import { ok } from "../context.ts";
import { badRequest } from "../errors.ts";
import { allowOnlyKeys, bodyObject, parseSince } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";
import { resumePipeline } from "./breakers.ts";

/** Daemon lifecycle routes (`admin`): drain, resume, reconcile, purge and the doctor probes. */

export async function drainRoute(ctx: RouteContext): Promise<Reply> {
  allowOnlyKeys(bodyObject(ctx.req), []);
  const state = await setDrain(ctx.deps.pool, ctx.principal.owner);
  ctx.deps.logger.info("daemon drained", { event: "api.drain", by: ctx.principal.owner });
  return ok({ drained: true, since: state.since, by: state.by });
}

export async function resumeRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["pipeline"]);
  // `{ pipeline }` closes that pipeline's circuit breaker early instead of undoing a drain
  if (body.pipeline !== undefined) return resumePipeline(ctx, body.pipeline);
  const wasDrained = await clearDrain(ctx.deps.pool);
  ctx.deps.logger.info("daemon resumed", {
    event: "api.resume",
    by: ctx.principal.owner,
    was_drained: wasDrained,
  });
  return ok({ drained: false, wasDrained });
}

function seconds(body: Record<string, unknown>, key: string, fallback: string): number {
  const value = body[key] ?? fallback;
  const ms = typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined) throw badRequest(`"${key}" must be a duration such as 30s, 5m or 1h`);
  return Math.max(1, Math.round(ms / 1000));
}

/** Makes the queue match the tables, by the rule the workers' sweepers apply too (db/reconcile-queue.ts). */
export async function reconcileRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["olderThan"]);
  const olderThan = seconds(body, "olderThan", "2m");
  const { triggers, invocations } = await reconcileQueue(
    ctx.deps.pool,
    ctx.deps.boss,
    ctx.deps.config.targets,
    olderThan,
  );
  ctx.deps.logger.info("queue reconciled", {
    event: "api.reconcile",
    triggers: triggers.length,
    invocations: invocations.length,
  });
  return ok({ requeued: { triggers, invocations } });
}

/** Deletes the failed history finished before `before` (default: all of it). */
export async function purgeRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["before"]);
  if (body.before !== undefined && typeof body.before !== "string") {
    throw badRequest('"before" must be an ISO timestamp or a duration such as 7d');
  }
  const before = body.before === undefined ? new Date() : parseSince(body.before, "before");
  const purged = await purgeFailedJobs(ctx.deps.pool, before);
  ctx.deps.logger.info("failed jobs purged", { event: "api.purge", purged });
  return ok({ purged, before: before.toISOString() });
}

export interface Probe {
  name: string;
  status: "ok" | "warning" | "error";
  message: string;
}

/** Checks only a running daemon can answer; `svc doctor` prints them after its configuration checks. */
export async function doctorRoute(ctx: RouteContext): Promise<Reply> {
  const { pool, config } = ctx.deps;
  const probes: Probe[] = [];
  const probe = async (name: string, run: () => Promise<Omit<Probe, "name">>) => {
    try {
      probes.push({ name, ...(await run()) });
    } catch (error) {
      probes.push({ name, status: "error", message: (error as Error).message });
    }
  };
  await probe("database", async () => {
    const version = await readServerVersion(pool);
    return { status: "ok", message: `PostgreSQL ${version ?? "?"} reachable` };
  });
  await probe("migrations", async () => {
    const known = await listMigrations();
    const applied = await appliedMigrationVersions(pool);
    const pending = known
      .filter((migration) => !applied.has(migration.version))
      .map((migration) => migration.name);
    return pending.length
      ? {
          status: "warning",
          message: `pending migrations: ${pending.join(", ")}; restart the daemon to apply them`,
        }
      : { status: "ok", message: `${known.length} migrations applied` };
  });
  await probe("queue", async () => {
    const failed = await countFailedSince(pool, new Date(Date.now() - 86_400_000));
    return failed
      ? {
          status: "warning",
          message: `${failed} job(s) failed in the last 24h; see svc queue status --verbose`,
        }
      : { status: "ok", message: "no failed jobs in the last 24h" };
  });
  await probe("drain", async () => {
    const drain = await readDrain(pool);
    return drain
      ? {
          status: "warning",
          message: `drained since ${drain.since} by ${drain.by}; workers claim no new work until resumed`,
        }
      : { status: "ok", message: "accepting work" };
  });
  await probe("credentials", async () => {
    const rows = await listDeadCredentials(pool);
    return rows.length
      ? {
          status: "warning",
          message: `dead credentials: ${rows.map((row) => `${row.target}/${row.credential}`).join(", ")}; replace the secret, delete the row and restart`,
        }
      : { status: "ok", message: "no dead credentials" };
  });
  await probe("tokens", async () => {
    const refused = Object.values(config.auth?.tokens ?? {})
      .map((token) => ({ name: token.name, unknown: unknownScopes(token.scopes) }))
      .filter((token) => token.unknown.length);
    return refused.length
      ? {
          status: "warning",
          message: refused
            .map(
              (token) =>
                `auth.tokens.${token.name} is refused on every route: unknown scope(s) ${token.unknown.join(", ")}`,
            )
            .join("; "),
        }
      : {
          status: "ok",
          message: `${Object.keys(config.auth?.tokens ?? {}).length} configured token(s) usable`,
        };
  });
  await probe("gateway", async () => gatewayProbe(await listGateways(pool)));
  await probe("access", async () => ({
    status: "ok",
    message:
      config.server.loopbackStar === false
        ? "server.loopback_star is false: every request needs a valid token, loopback clients included"
        : ctx.access.localInstall
          ? "local install: loopback clients need no token"
          : "local programs on loopback (no forwarding header, no other web site's Origin) need no token; every other request needs a valid token",
  }));
  return ok({ probes });
}

/**
 * The workers' model gateways as their rows say (each worker records its listener when it starts
 * and removes it when it stops), each asked once: any answer, even the 401 a request without a
 * gateway token gets, means it listens. On loopback, so only a worker on this host can answer;
 * a row whose listener does not is a worker elsewhere, or one that died without removing it.
 */
async function gatewayProbe(gateways: GatewayState[]): Promise<Omit<Probe, "name">> {
  if (gateways.length === 0)
    return {
      status: "warning",
      message: "no worker has a model gateway listening; start a worker (svc worker)",
    };
  const seen = await Promise.all(
    gateways.map(async (gateway) => {
      const answers = await fetch(gateway.url, { signal: AbortSignal.timeout(2_000) }).then(
        () => true,
        () => false,
      );
      return `worker ${gateway.worker}: ${gateway.url} ${answers ? "listening" : "not answering from this host (a worker elsewhere, or one that stopped without removing its row)"} since ${gateway.since}`;
    }),
  );
  const silent = seen.some((line) => line.includes("not answering"));
  return { status: silent ? "warning" : "ok", message: `model gateways: ${seen.join("; ")}` };
}
