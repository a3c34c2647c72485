import type pg from "pg";
import { gitlabClient, gitlabHost } from "../../shared/codehost/gitlab.ts";
import type { ConfigSnapshot } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { codehostClient, pullRefOf } from "./codehost.ts";
import { GitlabPublisher } from "./gitlab-publisher.ts";
import { installationToken, secretValue } from "./tokens.ts";

/** GitLab's award emoji names for svc's two reactions. */
const EMOJI: Record<CommandReaction["content"], string> = { eyes: "eyes", "-1": "thumbsdown" };

async function gitlabAward(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot> },
  reaction: CommandReaction,
): Promise<void> {
  const codehost = deps.config.codehost!;
  if (!codehost.token || reaction.number === undefined) return;
  const token = await secretValue(codehost.token, deps.pool, deps.config);
  const gitlab = new GitlabPublisher(
    gitlabClient({ apiUrl: codehost.apiUrl, token }),
    token,
    gitlabHost(codehost.apiUrl),
  );
  await gitlab.award(pullRefOf(reaction.repo, reaction.number), reaction.commentId, EMOJI[reaction.content]);
}

/** svc's answer to a comment command: 👀 taken, 👎 refused. */
export interface CommandReaction {
  repo: string;
  /** the pull (merge) request the comment is on: GitLab addresses a note through it */
  number?: number;
  commentId: number;
  content: "eyes" | "-1";
}

/**
 * Reacts to a command's comment as the default code-host identity (the App, or `codehost.token`), after the dispatch that judged
 * it committed. Best effort: the command was already taken or refused and recorded on its trigger,
 * so a reaction that fails is logged (without the token) and not retried.
 */
export async function postReaction(
  deps: { pool: pg.Pool; config: Readonly<ConfigSnapshot>; logger: Logger },
  reaction: CommandReaction,
): Promise<void> {
  const codehost = deps.config.codehost;
  if (!codehost?.token && !codehost?.app) return;
  const [owner, repo] = reaction.repo.split("/");
  if (!owner || !repo) return;
  try {
    if (codehost.kind === "gitlab") {
      await gitlabAward(deps, reaction);
      return;
    }
    // the App's installation token of the commented repository, or the default token
    const token = codehost.app
      ? (await installationToken(codehost.app, reaction.repo, deps.pool, deps.config)).token
      : await secretValue(codehost.token!, deps.pool, deps.config);
    const client = codehostClient({ apiUrl: codehost.apiUrl, token, logger: deps.logger });
    await client.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
      owner,
      repo,
      comment_id: reaction.commentId,
      content: reaction.content,
    });
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    deps.logger.warn("reaction to a comment command failed", {
      event: "command.reaction_failed",
      repo: reaction.repo,
      comment: reaction.commentId,
      content: reaction.content,
      ...(typeof status === "number" ? { status } : {}),
    });
  }
}
