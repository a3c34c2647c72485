import { recordTrigger } from "../../../db/record-trigger.ts";
import { ok } from "../context.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import { allowOnlyKeys, bodyObject, pathParam } from "../input.ts";
import type { Reply, RouteContext } from "../types.ts";
import { reader } from "./repos.ts";

/** The `source` of a rehearsal's trigger: where it came from, in `svc trigger list`. */
export const REHEARSAL_SOURCE = "doctor";

/**
 * `POST /repos/:owner/:name/pulls/:number/rehearse` (`pipelines:invoke`): the pull request's
 * `pull_request.synchronize` as GitHub would send it now, fired through the pipelines with its
 * outputs held back (`svc doctor --deep --fire`). The event is built by the daemon from GitHub's
 * own answer for the pull request, read with svc's default identity, never from the caller: the
 * author's association and the fork the gates judge are GitHub's, so a rehearsal runs exactly the
 * pipelines a real push would, sandboxed as a real push would be. Its runs join no concurrency
 * group (they neither cancel nor wait for a live review) and publish nothing; what they would
 * have posted is each invocation's `held/outputs.md` artifact.
 */
export async function rehearsePullRoute(ctx: RouteContext): Promise<Reply> {
  allowOnlyKeys(bodyObject(ctx.req), []);
  const repo = `${pathParam(ctx.req, "owner")}/${pathParam(ctx.req, "name")}`;
  const text = pathParam(ctx.req, "number");
  if (!/^[1-9][0-9]{0,9}$/.test(text)) throw badRequest(`"${text}" is not a pull request number`);
  if (!ctx.deps.config.repos[repo]) throw notFound("repository (not in daemon.yaml repos)");
  if (ctx.deps.config.codehost?.kind === "gitlab")
    throw badRequest(
      "a rehearsal replays a GitHub pull request; codehost.kind is gitlab, whose merge requests it does not build yet",
    );
  const number = Number(text);
  const pull = await reader(ctx)
    .pull(repo, number)
    .catch((error: unknown) => {
      if (error instanceof ApiError && error.code === "codehost_not_found")
        throw new ApiError(404, "not_found", `GitHub has no pull request ${repo}#${number} that svc can see`);
      throw error;
    });
  if (pull.state !== "open")
    throw badRequest(`${repo}#${number} is ${pull.state}: only an open pull request is pushed to`);
  // the shape of GitHub's `pull_request` webhook: the REST pull request is its `pull_request`, and
  // the base repository (the one the pull request is on) its `repository`
  const payload = {
    action: "synchronize",
    number,
    after: pull.head.sha,
    pull_request: pull,
    repository: pull.base.repo,
    sender: pull.user,
  };
  const { id } = await recordTrigger(ctx.deps.pool, ctx.deps.boss, {
    kind: "codehost",
    source: REHEARSAL_SOURCE,
    eventName: "pull_request.synchronize",
    deliveryId: null,
    payloadJson: JSON.stringify(payload),
    owner: ctx.principal.owner,
    holdOutputs: true,
  });
  ctx.deps.logger.info("rehearsal recorded: outputs held back", {
    event: "api.rehearsal_recorded",
    trigger: id,
    repo,
    number,
  });
  return ok({ trigger: id, repo, number, head: pull.head.sha }, 202);
}
