import express, { type NextFunction, type Request, type Response, Router } from "express";
import helmet from "helmet";
import type pg from "pg";
import { costsBy, costsPerDay } from "../../db/costs.ts";
import { listEvalCases } from "../../db/eval-cases.ts";
import { dailyCompletedByVersion, readCohort, statsByVersionTarget } from "../../db/eval-stats.ts";
import { findIdsByPrefix, readLineage } from "../../db/lineage.ts";
import { InvalidCursorError, listTriggers, type TriggerStatus } from "../../db/triggers.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { ApiError } from "../api/errors.ts";
import { costQuery, DEFAULT_COST_SINCE } from "../api/handlers/costs.ts";
import { TRACE_ID } from "../api/handlers/trace.ts";
import { createAccessControl } from "../auth/middleware.ts";
import { allows } from "../auth/principal.ts";
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from "../errors.ts";
import { compareCohorts, parseCohort } from "../evals/compare.ts";
import { shadowComparisonOf } from "../evals/shadow-compare.ts";
import { costsPage } from "./costs-page.ts";
import { readDeliveries } from "./deliveries.ts";
import { type EvalsView, evalsPage } from "./evals-page.ts";
import { loginPage, messagePage } from "./layout.ts";
import {
  authenticatePage,
  authenticateToken,
  clearSessionCookie,
  sameOrigin,
  setSessionCookie,
} from "./session.ts";
import { STYLESHEET } from "./style.ts";
import { tracePage } from "./trace-page.ts";
import { PAGE_STATUSES, triggersPage } from "./triggers-page.ts";

export interface UiDependencies {
  pool: pg.Pool;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  resolveSecret: (source: SecretSource) => string;
}

const SCOPE = "triggers:read";
const EVALS_SCOPE = "evals:write";
const SIGN_IN_SCOPES = [SCOPE, EVALS_SCOPE, "admin"];
const CODE = /^[a-z][a-z0-9_]*$/;
const CHART_DAYS = 30;

/**
 * The browser pages under /ui: server-rendered, escaped by construction (html.ts), no script, a
 * CSP that allows only our own stylesheet. They read the same lineage and trigger list as
 * `GET /trace/:id` and `GET /triggers`, with the same scope; /ui/evals reads what
 * `GET /evals/compare` does, with `evals:write`; /ui/costs what `GET /costs` does. Signing in takes a token holding either scope.
 */
export function createUiRouter(deps: UiDependencies): Router {
  const router = Router();
  const access = createAccessControl(deps);
  router.use("/ui", securityHeaders());

  router.get("/ui/style.css", (_req, res) => {
    res.locals.route = "/ui/style.css";
    res.type("text/css").set("Cache-Control", "max-age=300").send(STYLESHEET);
  });
  router.get("/ui", (_req, res) => {
    res.locals.route = "/ui";
    res.redirect(303, "/ui/triggers");
  });
  router.get("/ui/login", (req, res) => {
    res.locals.route = "/ui/login";
    res.type("html").send(loginPage({ next: safeNext(req.query.next) }));
  });
  router.post("/ui/login", express.urlencoded({ extended: false, limit: "8kb" }), async (req, res, next) => {
    res.locals.route = "/ui/login";
    if (!sameOrigin(req)) return refuseCrossSite(res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = typeof body.token === "string" ? body.token.trim() : "";
    const target = safeNext(body.next);
    try {
      if (!token) throw new ApiError(401, "unauthenticated", "enter a token");
      const principal = await authenticateToken(access, req, token);
      // a token for the evals page, or (admin) for /ui/setup/github, alone signs in too; each page checks its own scope
      if (!SIGN_IN_SCOPES.some((scope) => allows(principal, scope)))
        access.authorize(principal, SIGN_IN_SCOPES.join(" or "));
      setSessionCookie(req, res, token);
      res.redirect(303, target);
    } catch (error) {
      if (!(error instanceof ApiError)) return next(error);
      res
        .status(error.status)
        .type("html")
        .send(loginPage({ error: error.message, next: target }));
    }
  });
  router.post("/ui/logout", (req, res) => {
    res.locals.route = "/ui/logout";
    if (!sameOrigin(req)) return refuseCrossSite(res);
    clearSessionCookie(req, res);
    res.redirect(303, "/ui/login");
  });

  const guarded =
    (route: string, render: (req: Request) => Promise<{ status?: number; html: string }>, scope = SCOPE) =>
    async (req: Request, res: Response, next: NextFunction) => {
      res.locals.route = route;
      try {
        access.authorize(await authenticatePage(access, req), scope);
        const answer = await render(req);
        res
          .status(answer.status ?? 200)
          .type("html")
          .send(answer.html);
      } catch (error) {
        pageError(error, req, res, next, deps.logger);
      }
    };

  router.get(
    "/ui/trace/:id",
    guarded("/ui/trace/:id", (req) => renderTrace(deps.pool, String(req.params.id))),
  );
  router.get(
    "/ui/triggers",
    guarded("/ui/triggers", (req) => renderTriggers(deps.pool, req)),
  );
  router.get(
    "/ui/costs",
    guarded("/ui/costs", (req) => renderCosts(deps.pool, req)),
  );
  router.get(
    "/ui/evals",
    guarded("/ui/evals", (req) => renderEvals(deps, req), EVALS_SCOPE),
  );
  return router;
}

/** default-src 'none': no script of any kind, no external asset; only /ui/style.css may style. */
function securityHeaders() {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        "default-src": ["'none'"],
        "script-src": ["'none'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
      },
    },
    // "no-referrer" would make form POSTs carry `Origin: null`, which the CSRF check refuses
    referrerPolicy: { policy: "same-origin" },
  });
}

async function renderTrace(pool: pg.Pool, input: string): Promise<{ status?: number; html: string }> {
  if (!TRACE_ID.test(input)) {
    return {
      status: 400,
      html: messagePage(
        "Not a trace id",
        "the id must be a kind prefix trg_, run_, inv_ or tsk_ followed by at least six lowercase id characters",
        true,
      ),
    };
  }
  const candidates = await findIdsByPrefix(pool, input, 20);
  const resolved = candidates.includes(input) ? input : candidates.length === 1 ? candidates[0] : undefined;
  const lineage = resolved ? await readLineage(pool, resolved) : undefined;
  if (!resolved || !lineage) {
    const message = candidates.length
      ? `${input} matches ${candidates.length} records; give more characters (${candidates.join(", ")})`
      : "no such record with that id or prefix";
    return { status: candidates.length ? 409 : 404, html: messagePage("Not found", message, true) };
  }
  const deliveries = await readDeliveries(
    pool,
    lineage.invocations.map((invocation) => invocation.id),
  );
  return { html: tracePage(resolved, lineage, deliveries) };
}

async function renderTriggers(pool: pg.Pool, req: Request): Promise<{ status?: number; html: string }> {
  const text = (name: string) => (typeof req.query[name] === "string" ? (req.query[name] as string) : "");
  const statusText = text("status");
  const code = text("code").trim();
  const cursor = text("cursor");
  const status = (PAGE_STATUSES as readonly string[]).includes(statusText)
    ? (statusText as TriggerStatus)
    : undefined;
  const invalid =
    statusText && !status
      ? `status must be one of ${PAGE_STATUSES.join(", ")}`
      : code && !CODE.test(code)
        ? "the diagnostic code must look like agent_timeout"
        : undefined;
  const filter = invalid ? {} : { ...(status ? { status } : {}), ...(code ? { code } : {}) };
  try {
    const result = await listTriggers(pool, {
      ...filter,
      limit: 50,
      ...(cursor && !invalid ? { cursor } : {}),
    });
    return {
      status: invalid ? 400 : 200,
      // the form shows what was typed, even when refused (escaped like everything else)
      html: triggersPage({
        ...result,
        ...filter,
        ...(code ? { code } : {}),
        ...(invalid ? { error: invalid } : {}),
      }),
    };
  } catch (error) {
    if (!(error instanceof InvalidCursorError)) throw error;
    const first = await listTriggers(pool, { ...filter, limit: 50 });
    return { status: 400, html: triggersPage({ ...first, ...filter, error: error.message }) };
  }
}

/**
 * The comparison of cohorts `a` and `b` (by default the pipeline's two latest versions), its live
 * version against its shadow candidate (when it has one, or shadow runs), the completed rate per
 * version over the last CHART_DAYS days, and the pipeline's curated cases.
 */
async function renderEvals(deps: UiDependencies, req: Request): Promise<{ status?: number; html: string }> {
  const text = (name: string) =>
    typeof req.query[name] === "string" ? (req.query[name] as string).trim() : "";
  const pipelines = Object.keys(deps.config.pipelines).sort();
  const asked = text("pipeline");
  const view: EvalsView = { pipelines, a: text("a"), b: text("b"), days: [], cases: [] };
  if (asked && !pipelines.includes(asked))
    return { status: 400, html: evalsPage({ ...view, error: `no pipeline is named ${asked}` }) };
  const pipeline = asked || pipelines[0];
  if (!pipeline) return { html: evalsPage({ ...view, error: "no pipeline is configured" }) };
  view.pipeline = pipeline;
  const versions = [
    ...new Set((await statsByVersionTarget(deps.pool, { pipeline })).map((row) => row.version)),
  ].filter((version): version is string => version !== null);
  if (!view.a && !view.b && versions.length >= 2) {
    view.a = `version:${versions[versions.length - 2]}`;
    view.b = `version:${versions[versions.length - 1]}`;
  }
  view.days = await dailyCompletedByVersion(deps.pool, {
    pipeline,
    since: new Date(Date.now() - CHART_DAYS * 86_400_000),
  });
  view.cases = await listEvalCases(deps.pool, { pipeline, limit: 50 });
  const configured = deps.config.pipelines[pipeline];
  const shadow = await shadowComparisonOf(deps.pool, pipeline, {
    live: configured?.version ?? null,
    candidate: configured?.shadow?.candidate?.version ?? null,
  });
  if (configured?.shadow || shadow.live.runs > 0) view.shadow = shadow;
  if (!view.a && !view.b) return { html: evalsPage(view) };
  const a = parseCohort("a", view.a);
  const b = parseCohort("b", view.b);
  const invalid = "error" in a ? a.error : "error" in b ? b.error : undefined;
  if (invalid || "error" in a || "error" in b)
    return { status: 400, html: evalsPage({ ...view, error: invalid }) };
  const [runsA, runsB] = await Promise.all([
    readCohort(deps.pool, pipeline, a),
    readCohort(deps.pool, pipeline, b),
  ]);
  return { html: evalsPage({ ...view, comparison: compareCohorts({ a: view.a, b: view.b }, runsA, runsB) }) };
}

/** What `GET /costs` answers, as a page; a refused `by` or `since` shows the default window with the reason. */
async function renderCosts(pool: pg.Pool, req: Request): Promise<{ status?: number; html: string }> {
  const text = (name: string) =>
    typeof req.query[name] === "string" ? (req.query[name] as string).trim() : undefined;
  const asked = { by: text("by") || undefined, since: text("since") || undefined };
  let query: ReturnType<typeof costQuery>;
  let error: string | undefined;
  try {
    query = costQuery(asked.by, asked.since);
  } catch (refused) {
    if (!(refused instanceof ApiError)) throw refused;
    error = refused.message;
    query = costQuery(undefined, undefined);
  }
  const [rows, days] = await Promise.all([
    costsBy(pool, query.by, query.since),
    costsPerDay(pool, query.since),
  ]);
  const view = { by: query.by, since: asked.since ?? DEFAULT_COST_SINCE, rows, days };
  return error ? { status: 400, html: costsPage({ ...view, error }) } : { html: costsPage(view) };
}

/** Only our own pages are a place to return to after signing in (no open redirect). */
function safeNext(value: unknown): string {
  return typeof value === "string" && /^\/ui\/[A-Za-z0-9_/?=&.-]*$/.test(value) ? value : "/ui/triggers";
}

function refuseCrossSite(res: Response): void {
  res
    .status(403)
    .type("html")
    .send(
      messagePage(
        "Refused",
        "the form was not sent from this site's own page; open /ui/login and try again",
        false,
      ),
    );
}

function pageError(error: unknown, req: Request, res: Response, next: NextFunction, logger: Logger): void {
  if (error instanceof ApiError && error.status === 401) {
    res
      .status(401)
      .type("html")
      .send(loginPage({ error: error.message, next: safeNext(req.originalUrl) }));
    return;
  }
  if (error instanceof ApiError) {
    res
      .status(error.status)
      .type("html")
      .send(messagePage("Not allowed", error.message, true));
    return;
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn("the database is unreachable", { event: "ui.unavailable", route: res.locals.route });
    res
      .status(503)
      .set("Retry-After", String(RETRY_AFTER_SECONDS))
      .type("html")
      .send(messagePage("Unavailable", "the database is unreachable; retry later", false));
    return;
  }
  next(error);
}
