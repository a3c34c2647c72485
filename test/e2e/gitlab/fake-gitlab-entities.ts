/**
 * What fake-gitlab.ts and fake-gitlab-mr.ts share: the fixtures a test hands the fake, the answer a
 * route gives (written out by the server, so a lost answer can be swapped for a 502 after the change
 * was made), GitLab's error bodies, its offset pagination, and the user and project entities.
 */

export interface FakeGitLabUser {
  id: number;
  username: string;
  name?: string;
  bot?: boolean;
}

export interface FakeMergeRequest {
  iid: number;
  id?: number;
  title?: string;
  author_id: number;
  source_project_id?: number;
  source_branch: string;
  target_branch: string;
  diff_refs: { base_sha: string; start_sha: string; head_sha: string };
  /** what GET .../diffs answers: GitLab's diff objects */
  diffs: FakeDiff[];
}

export interface FakeDiff {
  old_path: string;
  new_path: string;
  diff: string;
  new_file?: boolean;
  renamed_file?: boolean;
  deleted_file?: boolean;
}

export interface FakeProject {
  id: number;
  path_with_namespace: string;
  visibility?: "private" | "internal" | "public";
  default_branch?: string;
  /** user id → access level (10 guest, 20 reporter, 30 developer, 40 maintainer, 50 owner) */
  members: Record<number, number>;
  mergeRequests: FakeMergeRequest[];
  /** what GET /repository/compare answers for two commits (fake-gitlab-repository.ts) */
  comparisons?: FakeComparison[];
}

/** The diffs from one commit to another, as GitLab's comparison of them lists them. */
export interface FakeComparison {
  from: string;
  to: string;
  diffs: FakeDiff[];
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export const reply = (status: number, body: unknown, headers?: Record<string, string>): Reply =>
  headers ? { status, body, headers } : { status, body };

/**
 * GitLab's bodies differ by where the error is raised: `render_api_error!` answers `message`, Grape's
 * parameter validation and the catch-all route answer `error`, and an ActiveRecord `find` that misses
 * answers "404 Not found" (lower case) where `not_found!('Project')` answers "404 Project Not Found".
 */
export const errors = {
  unauthorized: () => reply(401, { message: "401 Unauthorized" }),
  forbidden: () => reply(403, { message: "403 Forbidden" }),
  recordNotFound: () => reply(404, { message: "404 Not found" }),
  notFound: (what: string) => reply(404, { message: `404 ${what} Not Found` }),
  noRoute: () => reply(404, { error: "404 Not Found" }),
  invalid: (text: string) => reply(400, { error: text }),
  /** a model validation failure, rendered as GitLab does: the errors hash in Ruby's inspect form */
  badNote: (field: string, messages: string[]) =>
    reply(400, {
      message: `400 Bad request - Note {:${field}=>[${messages.map((m) => JSON.stringify(m)).join(", ")}]}`,
    }),
};

/** Fixed so a test's expectations do not depend on when the fake started. */
export const CREATED_AT = "2024-01-15T09:30:00.000Z";

export function displayName(user: FakeGitLabUser): string {
  return user.name ?? user.username;
}

/** GitLab's UserBasic: how authors, approvers and award givers appear inside other objects. */
export function userBasic(user: FakeGitLabUser, origin: string) {
  return {
    id: user.id,
    username: user.username,
    name: displayName(user),
    state: "active",
    locked: false,
    avatar_url: `https://secure.gravatar.com/avatar/${user.id}?s=80&d=identicon`,
    web_url: `${origin}/${user.username}`,
  };
}

export function projectEntity(project: FakeProject, origin: string, accessLevel: number) {
  const path = project.path_with_namespace;
  const segments = path.split("/");
  const name = segments.at(-1)!;
  const namespace = segments.slice(0, -1).join("/");
  return {
    id: project.id,
    description: null,
    name,
    name_with_namespace: segments.join(" / "),
    path: name,
    path_with_namespace: path,
    created_at: CREATED_AT,
    default_branch: project.default_branch ?? "main",
    tag_list: [],
    topics: [],
    ssh_url_to_repo: `git@${new URL(origin).host}:${path}.git`,
    http_url_to_repo: `${origin}/${path}.git`,
    web_url: `${origin}/${path}`,
    readme_url: null,
    forks_count: 0,
    avatar_url: null,
    star_count: 0,
    last_activity_at: CREATED_AT,
    namespace: {
      id: project.id + 100_000,
      name: segments.at(-2) ?? namespace,
      path: segments.at(-2) ?? namespace,
      kind: "group",
      full_path: namespace,
      parent_id: null,
      avatar_url: null,
      web_url: `${origin}/groups/${namespace}`,
    },
    visibility: project.visibility ?? "private",
    archived: false,
    empty_repo: false,
    merge_requests_enabled: true,
    issues_enabled: true,
    creator_id: 1,
    _links: {
      self: `${origin}/api/v4/projects/${project.id}`,
      merge_requests: `${origin}/api/v4/projects/${project.id}/merge_requests`,
      members: `${origin}/api/v4/projects/${project.id}/members`,
    },
    // GitLab answers null for a non-member, not a zero level
    permissions: {
      project_access: accessLevel > 0 ? { access_level: accessLevel, notification_level: 3 } : null,
      group_access: null,
    },
  };
}

/**
 * GitLab's offset pagination: `page`/`per_page` (20 by default, 100 at most), the `x-*` headers, and a
 * Link header of prev/next/first/last built from the request's own URL, so other query parameters
 * (`sort`, `order_by`) carry over. gitbeaker follows rel="next" by its query string.
 */
export function paginate(items: unknown[], url: URL, origin: string): Reply {
  const asked = Number.parseInt(url.searchParams.get("page") ?? "", 10);
  const askedSize = Number.parseInt(url.searchParams.get("per_page") ?? "", 10);
  const page = Number.isFinite(asked) && asked > 0 ? asked : 1;
  const perPage = Number.isFinite(askedSize) && askedSize > 0 ? Math.min(askedSize, 100) : 20;
  const totalPages = Math.max(1, Math.ceil(items.length / perPage));
  const link = (n: number, rel: string) => {
    const target = new URL(url.pathname + url.search, origin);
    target.searchParams.set("page", String(n));
    target.searchParams.set("per_page", String(perPage));
    return `<${target}>; rel="${rel}"`;
  };
  const links = [
    ...(page > 1 ? [link(Math.min(page - 1, totalPages), "prev")] : []),
    ...(page < totalPages ? [link(page + 1, "next")] : []),
    link(1, "first"),
    link(totalPages, "last"),
  ];
  return reply(200, items.slice((page - 1) * perPage, page * perPage), {
    "x-page": String(page),
    "x-per-page": String(perPage),
    "x-total": String(items.length),
    "x-total-pages": String(totalPages),
    "x-next-page": page < totalPages ? String(page + 1) : "",
    "x-prev-page": page > 1 ? String(page - 1) : "",
    link: links.join(", "),
  });
}
