import { getBacktest, listBacktests, startBacktest } from "../../../db/backtests.ts";
import type { BacktestSelection } from "../../../db/merged-pulls.ts";
import { triggersWithRecordedAnswers } from "../../../db/recorded-answers.ts";
import { VERSION_FILE } from "../../../shared/config/pipeline/shadow.ts";
import { isIdOf } from "../../../shared/ids.ts";
import { backtestReport } from "../../evals/backtest-report.ts";
import { ok } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, parseSince, pathParam, queryInt, queryString } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";
import { backtestReads, mergedOnHost, nothingToReplay, notRecordedReason } from "./backtest-hosts.ts";
import { pipelineNamed } from "./firing.ts";

const DEFAULT_LIMIT = 200;
const MAX_LIMIT = 1000;
const PULLS = /^([A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)#([1-9][0-9]{0,9})(?:\.\.#?([1-9][0-9]{0,9}))?$/;

/** `owner/repo#12` or `owner/repo#1..#200` (also `..200`): the pull requests of one repository. */
export function parsePulls(value: unknown): { repo: string; from: number; to: number }[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0)
    throw badRequest('"pulls" names no pull request; give e.g. ["acme/widgets#1..#200"]');
  return list.map((entry) => {
    const match = typeof entry === "string" ? PULLS.exec(entry.trim()) : null;
    if (!match)
      throw badRequest(
        `"pulls" entry ${JSON.stringify(entry)} is not owner/repo#<n> or owner/repo#<from>..#<to> (e.g. acme/widgets#1..#200)`,
      );
    const from = Number(match[2]);
    const to = match[3] ? Number(match[3]) : from;
    if (to < from)
      throw badRequest(`"pulls" entry ${entry} runs backwards; write ${match[1]}#${to}..#${from}`);
    return { repo: match[1]!, from, to };
  });
}

/**
 * `POST /evals/backtests` (`evals:write` and `pipelines:invoke`): the pipeline's candidate version
 * (`version_file`, which must be the candidate the daemon loaded as the pipeline's
 * `shadow.version_file`: a file of pipelines/ that nothing else runs) replayed on the recorded
 * events of merged pull requests (`last`: merged in that period; `pulls`: those numbers), each at
 * the head it had then, with its outputs held back. Answers at once with the backtest and what it
 * replays; `GET /evals/backtests/:id` follows it.
 */
export async function createBacktestRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["pipeline", "version_file", "last", "pulls", "at", "limit", "replay_answers"]);
  if (typeof body.pipeline !== "string" || !body.pipeline)
    throw badRequest('"pipeline" (a pipeline name) is required');
  const pipeline = pipelineNamed(ctx, body.pipeline);
  const file = body.version_file;
  if (typeof file !== "string" || !VERSION_FILE.test(file))
    throw badRequest(
      `"version_file" must name the candidate's file as pipelines/<file>.yaml in the daemon's configuration directory (got ${JSON.stringify(file)}); copy pipelines/${pipeline.name}.yaml to pipelines/${pipeline.name}.next.yaml and change it`,
    );
  const candidate = pipeline.shadow?.versionFile === file ? pipeline.shadow.candidate : undefined;
  if (!candidate)
    throw badRequest(
      pipeline.shadow?.versionFile === file
        ? `${file} is pipeline ${pipeline.name}'s shadow.version_file, but the daemon could not load it as a candidate; run svc config validate and fix what it names`
        : `${file} is not the candidate the daemon loaded for pipeline ${pipeline.name}: a backtest runs the pipeline's shadow version; declare it with svc pipeline shadow ${pipeline.name} ${file} --share 0 (it then runs in backtests only; svc daemon restart), so no other pipeline runs that file`,
    );
  if ((body.last === undefined) === (body.pulls === undefined))
    throw badRequest(
      'name the pull requests with exactly one of "last" (e.g. "30d") or "pulls" (e.g. ["acme/widgets#1..#200"])',
    );
  const at = body.at ?? "first";
  if (at !== "first" && at !== "last")
    throw badRequest(
      `"at" must be first (the first recorded push, the default) or last (the last before the merge)`,
    );
  const limit = body.limit ?? DEFAULT_LIMIT;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw badRequest(`"limit" must be a whole number from 1 to ${MAX_LIMIT}`);
  const replayAnswers = body.replay_answers ?? false;
  if (typeof replayAnswers !== "boolean")
    throw badRequest(
      `"replay_answers" must be true or false (got ${JSON.stringify(replayAnswers)}): true answers the candidate's model calls with the answers recorded on the live runs (the pipeline's record_answers)`,
    );
  const selection: BacktestSelection = { at, limit };
  if (body.last !== undefined) {
    if (typeof body.last !== "string") throw badRequest('"last" must be a duration such as 30d');
    selection.since = parseSince(body.last, "last");
  } else selection.pulls = parsePulls(body.pulls);

  const merged = await mergedOnHost(ctx, selection);
  const replayed = merged.flatMap((pull) => (pull.event ? [{ ...pull, event: pull.event }] : []));
  const skipped = merged
    .filter((pull) => !pull.event)
    .map((pull) => ({
      repo: pull.repo,
      number: pull.number,
      reason: notRecordedReason(ctx),
    }));
  if (replayed.length === 0)
    throw badRequest(
      nothingToReplay(
        ctx,
        body.last !== undefined
          ? `in the last ${body.last}`
          : `among ${(body.pulls as unknown[] | string).toString()}`,
        skipped.length,
      ),
    );
  if (replayAnswers) {
    const recorded = await triggersWithRecordedAnswers(
      ctx.deps.pool,
      pipeline.name,
      replayed.map((pull) => pull.event.trigger),
    );
    if (recorded.size === 0)
      throw badRequest(
        `"replay_answers": no live run of pipeline ${pipeline.name} recorded its model answers on the ${replayed.length} event${replayed.length === 1 ? "" : "s"} this backtest replays; set record_answers: true in ${pipeline.file} (svc daemon restart) and backtest pull requests reviewed after that, or start it without replay_answers`,
      );
  }
  const id = await startBacktest(ctx.deps.pool, ctx.deps.boss, {
    pipeline: pipeline.name,
    versionFile: file,
    candidateVersion: candidate.version,
    liveVersion: pipeline.version,
    selection: {
      ...(body.last !== undefined ? { last: body.last } : { pulls: body.pulls }),
      at,
      limit,
    },
    owner: ctx.principal.owner,
    replayAnswers,
    pulls: replayed,
  });
  ctx.deps.logger.info("backtest started", {
    event: "api.backtest",
    backtest: id,
    pipeline: pipeline.name,
    candidate: candidate.version,
    pulls: replayed.length,
  });
  return ok(
    {
      backtest: {
        id,
        pipeline: pipeline.name,
        versionFile: file,
        candidateVersion: candidate.version,
        liveVersion: pipeline.version,
        replayAnswers,
        pulls: replayed.map((pull) => ({
          repo: pull.repo,
          number: pull.number,
          event: pull.event.name,
          head: pull.event.head,
          finalHead: pull.finalHead,
        })),
        skipped,
      },
    },
    202,
  );
}

/** `GET /evals/backtests/:id`: progress, each pull request's comparison, and the totals per version. */
export async function getBacktestRoute(ctx: RouteContext): Promise<Reply> {
  const id = pathParam(ctx.req, "id");
  if (!isIdOf("backtest", id)) throw notFound("backtest");
  const backtest = await getBacktest(ctx.deps.pool, id);
  if (!backtest) throw notFound("backtest");
  const report = await backtestReport({ ...ctx.deps, reads: () => backtestReads(ctx) }, backtest);
  return ok(report);
}

/**
 * `GET /evals/backtests`: the newest backtests (of `pipeline`, else all), so one started with
 * `--no-wait` can be found again.
 */
export async function listBacktestsRoute(ctx: RouteContext): Promise<Reply> {
  const pipeline = queryString(ctx.req, "pipeline");
  const limit = queryInt(ctx.req, "limit", 20, 1, 200);
  return ok({ backtests: await listBacktests(ctx.deps.pool, { ...(pipeline ? { pipeline } : {}), limit }) });
}
