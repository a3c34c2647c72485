import { lastRunPerRepo, type PullRun, runsForPulls } from "../../../db/repo-runs.ts";
import { withoutUserinfo } from "../../../shared/config/daemon/repos.ts";
import { type CodehostReads, codehostReads } from "../../repos/codehost-reads.ts";
import { ok } from "../context.ts";
import { ApiError, notFound } from "../errors.ts";
import { pathParam } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";

/**
 * The configured repositories (`repos:read`): `daemon.yaml`'s `repos` with their default branch
 * from the code host and svc's last run on each, and a repository's open pull requests joined
 * with what svc ran for them.
 */

// one reader per daemon API (its default-branch cache), made on first use
const readers = new WeakMap<object, CodehostReads>();

export function reader(ctx: RouteContext): CodehostReads {
  let found = readers.get(ctx.deps);
  if (!found) {
    found = codehostReads(ctx.deps);
    readers.set(ctx.deps, found);
  }
  return found;
}

/**
 * `GET /repos`: every configured repository, in name order. A repository the code host refuses
 * is listed with its `error` (code and message naming the identity and the fix) instead of a branch.
 */
export async function listReposRoute(ctx: RouteContext): Promise<Reply> {
  const names = Object.keys(ctx.deps.config.repos).sort();
  const lastRuns = await lastRunPerRepo(ctx.deps.pool, names);
  const repos = await Promise.all(
    names.map(async (name) => {
      const last = lastRuns.get(name);
      const base = {
        name,
        // the resolved URL (clone_url, else the code host's); a user:password pasted into it stays here
        cloneUrl: withoutUserinfo(ctx.deps.config.repos[name]!.cloneUrl),
        lastRun: last
          ? {
              trigger: last.trigger,
              kind: last.kind,
              event: last.eventName,
              status: last.status,
              at: last.at,
            }
          : null,
      };
      try {
        return { ...base, defaultBranch: await reader(ctx).defaultBranch(name), error: null };
      } catch (error) {
        // one refused repository must not hide the others; the refusal is its row's answer
        if (!(error instanceof ApiError)) throw error;
        return { ...base, defaultBranch: null, error: { code: error.code, message: error.message } };
      }
    }),
  );
  return ok({ repos });
}

/**
 * `GET /repos/:owner/:name/pulls`: the open pull requests (all pages), newest first as the code
 * host lists them, each with the pipelines svc ran for it: runs, the last run's status, diagnostic
 * and published output links.
 */
export async function listPullsRoute(ctx: RouteContext): Promise<Reply> {
  const repo = `${pathParam(ctx.req, "owner")}/${pathParam(ctx.req, "name")}`;
  if (!ctx.deps.config.repos[repo]) throw notFound("repository (not in daemon.yaml repos)");
  const pulls = await reader(ctx).openPulls(repo);
  const runs = await runsForPulls(
    ctx.deps.pool,
    repo,
    pulls.map((pull) => pull.number),
  );
  return ok({
    repo,
    pulls: pulls.map((pull) => ({
      ...pull,
      pipelines: pipelinesOf(runs.filter((run) => run.number === pull.number)),
    })),
  });
}

/** Per pipeline (name order): how many runs, and the newest one's outcome and outputs. */
function pipelinesOf(runs: PullRun[]) {
  const byPipeline = new Map<string, PullRun[]>();
  for (const run of runs) byPipeline.set(run.pipeline, [...(byPipeline.get(run.pipeline) ?? []), run]);
  return [...byPipeline.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([pipeline, all]) => {
      const last = all[0]!;
      return {
        pipeline,
        runs: all.length,
        last: {
          invocation: last.invocation,
          trigger: last.trigger,
          version: last.pipelineVersion,
          status: last.status,
          diagnostic: last.diagnostic
            ? { code: last.diagnostic.code, message: last.diagnostic.message }
            : null,
          outputs: last.outputs,
          at: last.at,
        },
      };
    });
}
