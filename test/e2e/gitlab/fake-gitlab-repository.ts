import { CREATED_AT, errors, type FakeProject, type Reply, reply } from "./fake-gitlab-entities.ts";
import { diffEntity } from "./fake-gitlab-mr-entities.ts";

/**
 * The repository route of the fake: `GET /projects/:id/repository/compare?from=&to=`, answered as
 * GitLab's Entities::Compare (the last commit, the commits, the diffs, `compare_timeout`,
 * `compare_same_ref`, `web_url`) from the project's `comparisons`. `from` and `to` are required
 * (Grape's 400 names the missing one); a commit the project does not hold is GitLab's
 * `not_found!("Ref")`; comparing a commit with itself answers no diffs and `compare_same_ref`.
 */
export function isRepositoryRoute(method: string, rest: string[]): boolean {
  return method === "GET" && rest.length === 1 && rest[0] === "compare";
}

export function repositoryAnswer(
  project: FakeProject,
  params: Record<string, unknown>,
  origin: string,
): Reply {
  const missing = ["from", "to"].filter((name) => typeof params[name] !== "string" || params[name] === "");
  if (missing.length) return errors.invalid(missing.map((name) => `${name} is missing`).join(", "));
  const from = params.from as string;
  const to = params.to as string;
  const comparisons = project.comparisons ?? [];
  const known = new Set<string>();
  for (const comparison of comparisons) known.add(comparison.from).add(comparison.to);
  for (const mr of project.mergeRequests) known.add(mr.diff_refs.head_sha).add(mr.diff_refs.base_sha);
  if (!known.has(from) || !known.has(to)) return reply(404, { message: "404 Ref Not Found" });
  const same = from === to;
  const found = comparisons.find((comparison) => comparison.from === from && comparison.to === to);
  const commit = {
    id: to,
    short_id: to.slice(0, 8),
    created_at: CREATED_AT,
    parent_ids: same ? [] : [from],
    title: `commit ${to.slice(0, 8)}`,
    author_name: "Dev",
    author_email: "dev@example.com",
    authored_date: CREATED_AT,
    committer_name: "Dev",
    committer_email: "dev@example.com",
    committed_date: CREATED_AT,
    trailers: {},
    extended_trailers: {},
    web_url: `${origin}/${project.path_with_namespace}/-/commit/${to}`,
  };
  return reply(200, {
    commit: same ? null : commit,
    commits: same ? [] : [commit],
    diffs: same ? [] : (found?.diffs ?? []).map(diffEntity),
    compare_timeout: false,
    compare_same_ref: same,
    web_url: `${origin}/${project.path_with_namespace}/-/compare/${from}...${to}`,
  });
}
