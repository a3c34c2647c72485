import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  CREATED_AT,
  displayName,
  errors,
  type FakeDiff,
  type FakeGitLabUser,
  type FakeProject,
  projectEntity,
  type Reply,
  reply,
  userBasic,
} from "./fake-gitlab-entities.ts";
import { mergeRequestRoute, mergeRequests } from "./fake-gitlab-mr.ts";
import type { GitLabDiscussion, GitLabNote } from "./fake-gitlab-mr-entities.ts";
import { isRepositoryRoute, repositoryAnswer } from "./fake-gitlab-repository.ts";

export type { FakeDiff, FakeGitLabUser, FakeMergeRequest, FakeProject } from "./fake-gitlab-entities.ts";
export type { GitLabDiscussion, GitLabNote } from "./fake-gitlab-mr-entities.ts";
export type { Position } from "./fake-gitlab-position.ts";

/**
 * A fake GitLab REST API (v4, as gitlab.com and self-managed 17.x answer it) on loopback, for the
 * routes svc's GitLab client calls: the token's user and token, projects and memberships, and a
 * merge request's diffs, notes, discussions (diff notes checked against the diff), resolving,
 * approvals and award emoji (fake-gitlab-mr.ts), and the comparison of two commits
 * (fake-gitlab-repository.ts). It authenticates `PRIVATE-TOKEN` or `Authorization:
 * Bearer` as GitLab does, hides projects a user may not read behind "404 Project Not Found", answers
 * with GitLab's entities, error bodies and offset pagination, takes JSON, urlencoded or multipart
 * bodies (gitbeaker posts a diff note's position as multipart form fields), records every request,
 * and can fail or lose one answer. Git smart HTTP on the same origin goes to an optional handler.
 */
export interface GitLabRequest {
  method: string;
  /** the path as sent, `%2F` in a project path kept */
  path: string;
  token: string | undefined;
  body: unknown;
}

export interface FakeGitLab {
  /** the origin, e.g. `http://127.0.0.1:PORT` */
  url: string;
  /** `${url}/api/v4` */
  apiUrl: string;
  requests: GitLabRequest[];
  /** every note posted to the merge request, discussion replies included, in the order posted */
  notes(projectPath: string, iid: number): GitLabNote[];
  discussions(projectPath: string, iid: number): GitLabDiscussion[];
  /** usernames of the users who approved, in order */
  approvals(projectPath: string, iid: number): string[];
  /** award emoji on the merge request's notes, with the username of who gave each */
  awards(projectPath: string, iid: number): { note_id: number; name: string; user: string }[];
  /** a new version of the merge request: a new head sha (start and base kept) and new diffs */
  push(projectPath: string, iid: number, version: { head_sha: string; diffs: FakeDiff[] }): void;
  /** the next `method` request to a path ending like this answers 502 without doing anything */
  failOnce(method: string, pathSuffix: string): void;
  /**
   * the next `method` request to a path ending like this is refused with GitLab's 400 for a diff
   * note's position, doing nothing: what GitLab answers for a line it does not show (a collapsed
   * or too large diff) though the patch svc read holds it
   */
  refusePositionOnce(method: string, pathSuffix: string): void;
  /**
   * the next `method` request to a path ending like this is applied, then answered 502; a request
   * GitLab refuses (4xx) does not use it up
   */
  loseAnswerOnce(method: string, pathSuffix: string): void;
  close(): Promise<void>;
}

type TokenSpec = FakeGitLabUser & { scopes?: string[]; expires_at?: string | null };

const API = "/api/v4";
const BAD_GATEWAY: Reply = reply(502, { message: "502 Bad Gateway" });
const EXPIRED = "Token is expired. You can either do re-authorization or token refresh.";
const INSUFFICIENT = "The request requires higher privileges than provided by the access token.";

export async function startFakeGitLab(options: {
  /** token → the user it authenticates (a personal, project or group access token) */
  tokens: Record<string, TokenSpec>;
  projects: FakeProject[];
  /** git over smart HTTP on the same origin (test/support/git-smart-http.ts) */
  git?: { handle(req: IncomingMessage, res: ServerResponse): boolean };
}): Promise<FakeGitLab> {
  let origin = "";
  const requests: GitLabRequest[] = [];
  const failing: { method: string; suffix: string }[] = [];
  const refusing: { method: string; suffix: string }[] = [];
  const losing: { method: string; suffix: string }[] = [];
  const users = new Map<number, FakeGitLabUser>();
  for (const spec of Object.values(options.tokens)) {
    const { scopes: _, expires_at: __, ...user } = spec;
    users.set(user.id, user);
  }
  // a merge request's author or a member need not hold a token; they still have a name to show
  const userOf = (id: number) => users.get(id) ?? { id, username: `user${id}`, name: `User ${id}` };
  const mrs = mergeRequests({ projects: options.projects, origin: () => origin, userOf });

  const take = (list: { method: string; suffix: string }[], method: string, path: string) => {
    const decoded = safeDecode(path);
    const index = list.findIndex(
      (entry) => entry.method === method && (path.endsWith(entry.suffix) || decoded.endsWith(entry.suffix)),
    );
    if (index < 0) return false;
    list.splice(index, 1);
    return true;
  };

  const findProject = (id: string): FakeProject | undefined => {
    if (/^\d+$/.test(id)) return options.projects.find((project) => String(project.id) === id);
    const path = safeDecode(id).toLowerCase();
    return options.projects.find((project) => project.path_with_namespace.toLowerCase() === path);
  };

  /** What the token may do here: GitLab's scopes (`read_api` reads, `read_user` reads /user). */
  const scopeRefusal = (spec: TokenSpec, method: string, segments: string[]): Reply | undefined => {
    const scopes = spec.scopes ?? ["api"];
    const route = segments.join("/");
    if (route === "personal_access_tokens/self") return undefined;
    const allowed = ["api", ...(method === "GET" ? ["read_api"] : [])];
    if (route === "user" && method === "GET") allowed.push("read_user");
    if (allowed.some((scope) => scopes.includes(scope))) return undefined;
    return reply(403, {
      error: "insufficient_scope",
      error_description: INSUFFICIENT,
      scope: allowed.join(" "),
    });
  };

  const route = (
    method: string,
    segments: string[],
    url: URL,
    params: Record<string, unknown>,
    spec: TokenSpec,
    user: FakeGitLabUser,
    tokenId: number,
  ): Reply => {
    if (segments[0] === "user") return reply(200, currentUser(user, origin));
    if (segments[0] === "personal_access_tokens")
      return reply(200, {
        id: tokenId,
        name: `${user.username}-token`,
        revoked: false,
        created_at: CREATED_AT,
        description: null,
        scopes: spec.scopes ?? ["api"],
        user_id: user.id,
        last_used_at: new Date().toISOString(),
        active: true,
        expires_at: spec.expires_at ?? null,
      });
    const project = findProject(segments[1]!);
    const level = project?.members[user.id] ?? 0;
    const visible = project && (level > 0 || (project.visibility ?? "private") !== "private");
    if (!project || !visible) return errors.notFound("Project");
    if (segments.length === 2) return reply(200, projectEntity(project, origin, level));
    if (segments[2] === "members") {
      const memberId = Number(segments[4]);
      const access = project.members[memberId];
      if (!access) return errors.recordNotFound();
      return reply(200, {
        ...userBasic(userOf(memberId), origin),
        access_level: access,
        created_at: CREATED_AT,
        created_by: null,
        expires_at: null,
        membership_state: "active",
      });
    }
    if (segments[2] === "repository") return repositoryAnswer(project, params, origin);
    return mrs.answer(
      project,
      Number(segments[3]),
      { method, rest: segments.slice(4), params, url },
      { user, level },
    );
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // before anything reads the body: a git request's is a pack negotiation, not JSON
    if (options.git?.handle(req, res)) return;
    const method = req.method ?? "GET";
    const url = new URL(req.url ?? "/", "http://x");
    const read = await readBody(req);
    const token =
      headerValue(req.headers["private-token"]) ??
      /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim();
    requests.push({ method, path: url.pathname, token, body: read.body });
    // a proxy in front failed: nothing reached GitLab
    if (take(failing, method, url.pathname)) return write(res, BAD_GATEWAY);
    if (take(refusing, method, url.pathname))
      return write(res, errors.badNote("line_code", ["can't be blank", "must be a valid line code"]));
    if (!url.pathname.startsWith(`${API}/`)) return write(res, errors.noRoute());
    const segments = url.pathname.slice(API.length + 1).split("/");
    if (!known(method, segments)) return write(res, errors.noRoute());
    if ("error" in read) return write(res, read.error);
    const spec = token === undefined ? undefined : options.tokens[token];
    if (!spec) return write(res, errors.unauthorized());
    if (spec.expires_at && Date.parse(spec.expires_at) <= Date.now()) {
      const challenge = `Bearer realm="The API", error="invalid_token", error_description="${EXPIRED}"`;
      return write(
        res,
        reply(401, { error: "invalid_token", error_description: EXPIRED }, { "www-authenticate": challenge }),
      );
    }
    const refused = scopeRefusal(spec, method, segments);
    if (refused) return write(res, refused);
    const user = userOf(spec.id);
    const tokenId = Object.keys(options.tokens).indexOf(token!) + 1;
    const params = { ...nest(url.searchParams), ...read.body };
    const answer = route(method, segments, url, params, spec, user, tokenId);
    // the change was made, but its answer was lost on the way back
    if (answer.status < 300 && take(losing, method, url.pathname)) return write(res, BAD_GATEWAY);
    return write(res, answer);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) =>
      write(res, reply(500, { message: `500 Internal Server Error: ${error}` })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: origin,
    apiUrl: `${origin}${API}`,
    requests,
    notes: mrs.notes,
    discussions: mrs.discussions,
    approvals: mrs.approvals,
    awards: mrs.awards,
    push: mrs.push,
    failOnce: (method, suffix) => failing.push({ method, suffix }),
    refusePositionOnce: (method, suffix) => refusing.push({ method, suffix }),
    loseAnswerOnce: (method, suffix) => losing.push({ method, suffix }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Whether the path is a route the fake answers; GitLab's catch-all 404s others before any auth. */
function known(method: string, segments: string[]): boolean {
  const [first, id, kind, ...rest] = segments;
  if (first === "user") return segments.length === 1 && method === "GET";
  if (first === "personal_access_tokens") return id === "self" && segments.length === 2 && method === "GET";
  if (first !== "projects" || !id) return false;
  if (segments.length === 2) return method === "GET";
  if (kind === "members")
    return method === "GET" && rest.length === 2 && rest[0] === "all" && /^\d+$/.test(rest[1]!);
  if (kind === "repository") return isRepositoryRoute(method, rest);
  if (kind !== "merge_requests" || !/^\d+$/.test(rest[0] ?? "")) return false;
  return mergeRequestRoute(method, rest.slice(1)) !== undefined;
}

function currentUser(user: FakeGitLabUser, origin: string) {
  return {
    ...userBasic(user, origin),
    created_at: CREATED_AT,
    bio: "",
    location: "",
    public_email: null,
    linkedin: "",
    twitter: "",
    discord: "",
    website_url: "",
    organization: "",
    job_title: "",
    pronouns: null,
    bot: user.bot ?? false,
    work_information: null,
    followers: 0,
    following: 0,
    local_time: null,
    last_sign_in_at: null,
    confirmed_at: CREATED_AT,
    last_activity_on: new Date().toISOString().slice(0, 10),
    email: `${user.username}@example.com`,
    theme_id: 3,
    color_scheme_id: 1,
    projects_limit: 100000,
    current_sign_in_at: null,
    identities: [],
    can_create_group: !user.bot,
    can_create_project: !user.bot,
    two_factor_enabled: false,
    external: false,
    private_profile: false,
    commit_email: `${user.username}@example.com`,
    name_with_username: `${displayName(user)} (${user.username})`,
  };
}

function write(res: ServerResponse, answer: Reply) {
  res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
  res.end(JSON.stringify(answer.body));
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The body as Grape reads it: JSON, or form fields (urlencoded or multipart) whose `a[b]` names
 * nest, as `position[new_line]` does when gitbeaker posts a diff note.
 */
async function readBody(
  req: IncomingMessage,
): Promise<{ body: Record<string, unknown> | undefined } | { body: unknown; error: Reply }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  if (raw.length === 0) return { body: undefined };
  const type = req.headers["content-type"] ?? "";
  if (/multipart\/form-data|application\/x-www-form-urlencoded/i.test(type)) {
    const form = await new Response(raw, { headers: { "content-type": type } }).formData();
    const fields: [string, string][] = [];
    form.forEach((value, key) => {
      fields.push([key, typeof value === "string" ? value : value.name]);
    });
    return { body: nest(fields) };
  }
  const text = raw.toString("utf8");
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      return { body: parsed as Record<string, unknown> };
    return { body: parsed, error: errors.invalid("The request body is not a JSON object") };
  } catch {
    return { body: text, error: errors.invalid("The request body is not valid JSON") };
  }
}

/** Rack's nesting of `a[b][c]` and `a[]` parameter names. */
function nest(entries: Iterable<[string, string]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    const parts = key.replace(/\]/g, "").split("[");
    if (parts.includes("__proto__")) continue;
    let target: Record<string, unknown> | unknown[] = out;
    for (const [index, part] of parts.slice(0, -1).entries()) {
      const container = target as Record<string, unknown>;
      container[part] ??= parts[index + 1] === "" ? [] : {};
      target = container[part] as Record<string, unknown> | unknown[];
    }
    if (Array.isArray(target)) target.push(value);
    else target[parts.at(-1)!] = value;
  }
  return out;
}
