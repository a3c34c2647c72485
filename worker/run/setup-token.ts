import { isNotInstalled } from "../../shared/codehost/app-tokens.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { type Diagnostic, diagnostic } from "../../shared/diagnostics.ts";
import { PublishError } from "../outputs/attempt.ts";
import { codehostIdentity, installationToken } from "../outputs/tokens.ts";
import type { RunDeps } from "./types.ts";

/**
 * Read-only permissions of a setup step's token: a step runs the pull request's own scripts, so
 * what it holds must not be able to write anything (no comment, no push, no review).
 */
export const SETUP_TOKEN_PERMISSIONS = {
  contents: "read",
  pull_requests: "read",
  issues: "read",
  metadata: "read",
} as const;

/**
 * The `GH_TOKEN` of a pipeline's setup steps, when its code-host identity is a GitHub App: an
 * installation token reaching only the event's repository, read-only. A long-lived token identity
 * gives setup steps nothing, as before (such a token reaches everything its owner can).
 */
export async function setupStepToken(
  deps: RunDeps,
  pipeline: Pipeline,
  repo: string,
): Promise<{ token?: string; failure?: Diagnostic }> {
  if (pipeline.setup.length === 0 || !repo) return {};
  const identity = codehostIdentity(deps.config, pipeline);
  if (!identity?.credential.app) return {};
  try {
    const { token } = await installationToken(identity.credential.app, repo, deps.pool, deps.config, {
      restrict: true,
      permissions: SETUP_TOKEN_PERMISSIONS,
    });
    return { token };
  } catch (error) {
    if (!(error instanceof PublishError)) throw error;
    // not installed on the repository: a public one needs no token (its checkout was anonymous), and
    // a private one could not have been checked out, so the steps go on without GH_TOKEN
    if (isNotInstalled(error)) return {};
    return {
      failure: diagnostic(
        "setup_failed",
        `the GH_TOKEN of the setup steps (${identity.name} on ${repo}) could not be issued: ${error.message}`,
        { field: "codehost" },
      ),
    };
  }
}
