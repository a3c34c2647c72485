import { type BacktestSelection, type MergedPull, mergedPulls } from "../../../db/merged-pulls.ts";
import { type BacktestReads, gitlabBacktestReads } from "../../repos/gitlab-reads.ts";
import type { RouteContext } from "../types.ts";
import { reader } from "./repos.ts";

/**
 * What a backtest selects and reads on the code host svc serves: merged GitHub pull requests or,
 * with `codehost.kind: gitlab`, merged merge requests (db/merged-pulls.ts), and the reads its
 * comparison makes (ingress/repos/gitlab-reads.ts on GitLab).
 */
const onGitlab = (ctx: RouteContext) => ctx.deps.config.codehost?.kind === "gitlab";

export function mergedOnHost(ctx: RouteContext, selection: BacktestSelection): Promise<MergedPull[]> {
  return mergedPulls(ctx.deps.pool, selection, onGitlab(ctx) ? "gitlab" : "github");
}

/** Why a merged pull request (merge request) is not replayed: no event of its code was recorded. */
export function notRecordedReason(ctx: RouteContext): string {
  return onGitlab(ctx)
    ? "no merge_request delivery (open, reopen, or update with a push) was recorded before its merge"
    : "no pull_request delivery (opened, reopened, synchronize) was recorded before its merge";
}

/** The refusal of a selection with nothing to replay, `among`: what was asked for. */
export function nothingToReplay(ctx: RouteContext, among: string, skipped: number): string {
  const without = skipped ? ` (${skipped} merged without one)` : "";
  return onGitlab(ctx)
    ? `svc recorded no merged merge request ${among} with a merge_request delivery before its merge${without}; a backtest replays what svc recorded: the project's webhook must send merge request events (its merge too)`
    : `svc recorded no merged pull request ${among} with a pull_request delivery before its merge${without}; a backtest replays what svc recorded: its GitHub webhook must send pull_request events`;
}

// one GitLab reader per daemon API, made on first use
const gitlabReaders = new WeakMap<object, BacktestReads>();

export function backtestReads(ctx: RouteContext): BacktestReads {
  if (!onGitlab(ctx)) return reader(ctx);
  let found = gitlabReaders.get(ctx.deps);
  if (!found) {
    found = gitlabBacktestReads(ctx.deps);
    gitlabReaders.set(ctx.deps, found);
  }
  return found;
}
