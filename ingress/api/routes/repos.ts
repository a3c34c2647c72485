import { rehearsePullRoute } from "../handlers/rehearse.ts";
import { listPullsRoute, listReposRoute } from "../handlers/repos.ts";
import type { RouteSpec } from "../types.ts";

export const REPO_ROUTES: readonly RouteSpec[] = [
  {
    method: "GET",
    path: "/repos",
    scope: "repos:read",
    summary:
      "daemon.yaml's repos: default branch (code host, default identity, cached 60s) or the code host's refusal, and svc's last run",
    handler: listReposRoute,
  },
  {
    method: "GET",
    path: "/repos/:owner/:name/pulls",
    scope: "repos:read",
    summary:
      "open pull requests of a configured repo (all pages), each with the pipelines svc ran: runs, last status, diagnostic, output links",
    handler: listPullsRoute,
  },
  {
    method: "POST",
    path: "/repos/:owner/:name/pulls/:number/rehearse",
    scope: "pipelines:invoke",
    summary:
      "fire the pull request's synchronize (built from GitHub's answer) with outputs held back: what the runs would post becomes their held/outputs.md artifact",
    handler: rehearsePullRoute,
  },
];
