import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type Exchange, type FakeAppSpec, fakeAppHost } from "./fake-github-app.ts";
import { answerCompare } from "./fake-github-compare.ts";
import { answerGraphql, type FakeThread } from "./fake-github-graphql.ts";
import { answerReviewReactions, type FakeReaction } from "./fake-github-reactions.ts";

/**
 * A fake GitHub REST API on loopback, answering like api.github.com for the routes svc publishes
 * and reads through: it checks the method, path, `authorization` header and body, keeps what was
 * posted, and answers with GitHub's response shapes, error bodies, `Link` pagination and
 * `x-ratelimit-*` headers (a spent rate limit answers 403 "API rate limit exceeded" as GitHub does).
 * Issue comments can be edited (`PATCH .../issues/comments/{id}`); a review's inline comments become
 * review comments, listed with replies by `GET .../pulls/{n}/comments`, each opening a review thread
 * that the GraphQL endpoint lists and resolves, each readable by id (`GET .../pulls/comments/{id}`);
 * `reviewComment` adds one a person wrote on GitHub's page; `pushFiles` changes a pull request's diff, and the
 * comments whose lines changed become outdated (`line: null`), as on GitHub. Reactions can be
 * added to an issue comment the fake holds (`POST .../issues/comments/{id}/reactions`), and listed,
 * added and removed on a review comment (`.../pulls/comments/{id}/reactions`, fake-github-reactions.ts).
 */
export interface Recorded {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

interface Posted {
  id: number;
  body: string;
  user: { login: string; id: number; type: string };
  [field: string]: unknown;
}

export interface FakeGitHub {
  url: string;
  requests: Recorded[];
  comments: Map<string, Posted[]>;
  reviews: Map<string, Posted[]>;
  replies: Map<string, Posted[]>;
  /** review comments (a review's inline comments and replies) by `owner/repo#number` */
  reviewComments: Map<string, Posted[]>;
  threads: FakeThread[];
  /** reactions on issue comments: comment id → the reactions posted to it, with who posted them */
  reactions: Map<number, { content: string; user: string }[]>;
  /** reactions on review comments: comment id → GitHub's reaction objects, oldest first */
  reviewReactions: Map<number, FakeReaction[]>;
  files: Map<string, { filename: string; status: string; patch?: string }[]>;
  /** `owner/repo` → login → permission (`admin`, `write`, `read`): GitHub's collaborators; others are none (404) */
  collaborators: Map<string, Map<string, string>>;
  /**
   * A review comment a person wrote on GitHub's page, as GitHub stores it (and sends it in a
   * `pull_request_review_comment` delivery): a reply in the thread of `inReplyTo`, on its lines, or
   * the first comment of a review of their own on `path` and `line`.
   */
  reviewComment(
    pull: string,
    comment: {
      login: string;
      body: string;
      association: string;
      inReplyTo?: number;
      path?: string;
      line?: number;
    },
  ): Posted;
  /** a push: the pull request's new diff; review comments whose line's text changed become outdated */
  pushFiles(thread: string, files: { filename: string; status: string; patch?: string }[]): void;
  /** the next POST to a path ending like this is stored, then answered 502 (the answer is lost) */
  loseAnswerOnce(pathSuffix: string): void;
  /** the next `method` request to a path ending like this is applied, then its connection dropped unanswered */
  dropAnswerOnce(method: string, pathSuffix: string): void;
  /** the next request to a path ending like this answers 502 without doing anything */
  failOnce(pathSuffix: string): void;
  /** every later request is refused as over the primary rate limit until the reset an hour on */
  exhaustRateLimit(): void;
  /** App mode: every installation-token exchange, in order */
  exchanges: Exchange[];
  close(): Promise<void>;
}

const DOCS = "https://docs.github.com/rest";

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

/** A repository the fake hosts: GitHub's repository object and its pull requests (open and closed). */
export interface HostedRepo {
  repository: Record<string, unknown>;
  pulls: Record<string, unknown>[];
}

const RATE_LIMIT = 5000;

/**
 * `users`: token → login of the account it authenticates; `locked`: repos every token's writes are
 * refused on; `unreadable`: repos every read of is refused (403, as a token without access to
 * them); `repos`: `owner/name` → what `GET /repos/...` and `GET /repos/.../pulls` answer.
 */
export async function startFakeGitHub(options: {
  users: Record<string, string>;
  locked?: string[];
  unreadable?: string[];
  repos?: Record<string, HostedRepo>;
  /** the address it listens on: loopback unless a drill's hosts must reach it on their bridge */
  host?: string;
  /** App mode (fake-github-app.ts): Apps known by public key, acting through installation tokens */
  apps?: FakeAppSpec[];
  /** git over smart HTTP on the same origin, as github.com serves it (test/support/git-smart-http.ts) */
  git?: { handle(req: IncomingMessage, res: ServerResponse): boolean; pathOf?(fullName: string): string };
}): Promise<FakeGitHub> {
  const apps = fakeAppHost(options.apps ?? []);
  let nextId = 1000;
  const lose = new Set<string>();
  const drop = new Set<string>();
  const fail = new Set<string>();
  const rate = { used: 0, reset: Math.floor(Date.now() / 1000) + 3600 };
  const state = {
    requests: [] as Recorded[],
    comments: new Map<string, Posted[]>(),
    reviews: new Map<string, Posted[]>(),
    replies: new Map<string, Posted[]>(),
    reviewComments: new Map<string, Posted[]>(),
    threads: [] as FakeThread[],
    reactions: new Map<number, { content: string; user: string }[]>(),
    reviewReactions: new Map<number, FakeReaction[]>(),
    files: new Map<string, { filename: string; status: string; patch?: string }[]>(),
    collaborators: new Map<string, Map<string, string>>(),
  };
  const userIds = new Map(Object.values(options.users).map((login, index) => [login, 100 + index]));
  let base = "";
  const list = (map: Map<string, Posted[]>, key: string) => {
    if (!map.has(key)) map.set(key, []);
    return map.get(key)!;
  };

  /** a review comment of `repo` by id, a thread's first or a reply, on any of its pull requests */
  const reviewCommentOf = (repo: string, id: number) =>
    [...state.reviewComments.entries(), ...state.replies.entries()]
      .filter(([pull]) => pull.startsWith(`${repo}#`))
      .flatMap(([, comments]) => comments)
      .find((comment) => comment.id === id);
  /** a reply stands on the lines of the comment it answers, as GitHub shows them on it */
  const onLinesOf = (root: Posted | undefined) =>
    root
      ? {
          path: root.path,
          line: root.line,
          original_line: root.original_line,
          side: root.side,
          commit_id: root.commit_id,
          diff_hunk: root.diff_hunk,
        }
      : {};

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // before anything reads the body: a git request's is a pack negotiation, not JSON
    if (options.git?.handle(req, res)) return;
    const url = new URL(req.url ?? "/", "http://x");
    const body = await readBody(req);
    const authorization = req.headers.authorization;
    state.requests.push({ method: req.method ?? "", path: url.pathname, authorization, body });
    if (await apps.handle(req, url.pathname, body, res)) return;
    const token = /^(?:token|bearer) (.+)$/i.exec(authorization ?? "")?.[1];
    const installation = token ? apps.login(token, req.method ?? "GET", url.pathname) : undefined;
    if (installation && "status" in installation)
      return send(res, installation.status, {
        message: installation.message,
        documentation_url: DOCS,
        status: String(installation.status),
      });
    const login = token ? (options.users[token] ?? installation?.login) : undefined;
    if (!login) return send(res, 401, { message: "Bad credentials", documentation_url: DOCS, status: "401" });
    for (const entry of fail) {
      if (url.pathname.endsWith(entry)) {
        fail.delete(entry);
        return send(res, 502, { message: "Server Error" });
      }
    }
    rate.used += 1;
    const limits = {
      "x-ratelimit-limit": String(RATE_LIMIT),
      "x-ratelimit-remaining": String(Math.max(0, RATE_LIMIT - rate.used)),
      "x-ratelimit-used": String(Math.min(RATE_LIMIT, rate.used)),
      "x-ratelimit-reset": String(rate.reset),
      "x-ratelimit-resource": "core",
    };
    res.setHeader("x-github-api-version-selected", "2022-11-28");
    for (const [name, value] of Object.entries(limits)) res.setHeader(name, value);
    if (rate.used > RATE_LIMIT)
      return send(res, 403, {
        message: `API rate limit exceeded for user ID 42. If you reach out to GitHub Support for help, please include the request ID.`,
        documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
        status: "403",
      });
    const page = Number(url.searchParams.get("page") ?? "1");
    const perPage = Math.min(Number(url.searchParams.get("per_page") ?? "30"), 100);
    // GitHub's pagination: the page, and a Link header naming the next and last pages
    const sendPage = (items: unknown[]) => {
      const last = Math.max(1, Math.ceil(items.length / perPage));
      const link = (n: number, rel: string) => {
        const target = new URL(url.pathname + url.search, base);
        target.searchParams.set("page", String(n));
        target.searchParams.set("per_page", String(perPage));
        return `<${target}>; rel="${rel}"`;
      };
      const links = [
        ...(page < last ? [link(page + 1, "next"), link(last, "last")] : []),
        ...(page > 1 ? [link(1, "first"), link(page - 1, "prev")] : []),
      ];
      return send(
        res,
        200,
        items.slice((page - 1) * perPage, page * perPage),
        links.length ? { link: links.join(", ") } : {},
      );
    };
    // an App's installation acts as its `<slug>[bot]` account; a token's account is a user's
    const user = { login, id: userIds.get(login) ?? 42, type: installation ? "Bot" : "User" };
    // the account a token acts as; an App's installation token is no user, and GitHub says so
    if (url.pathname === "/user" && req.method === "GET") {
      if (installation)
        return send(res, 403, {
          message: "Resource not accessible by integration",
          documentation_url: `${DOCS}/users/users#get-the-authenticated-user`,
          status: "403",
        });
      return send(res, 200, { ...user, type: "User" });
    }
    // the change is made, then the connection closes without an answer: a proxy in between failed
    const dropped = () => {
      const entry = [...drop].find(
        (candidate) => candidate.startsWith(`${req.method} `) && url.pathname.endsWith(suffixOf(candidate)),
      );
      if (!entry) return false;
      drop.delete(entry);
      res.socket?.destroy();
      return true;
    };
    // two commits compared, from the repository git serves (fake-github-compare.ts)
    const compare = /^\/repos\/([^/]+)\/([^/]+)\/compare\/([0-9a-f]{7,40})\.\.\.([0-9a-f]{7,40})$/.exec(
      url.pathname,
    );
    if (compare && req.method === "GET" && options.git?.pathOf) {
      const answer = answerCompare(
        options.git.pathOf(`${compare[1]}/${compare[2]}`),
        compare[3]!,
        compare[4]!,
      );
      return send(res, answer.status, answer.body);
    }
    if (url.pathname === "/graphql" && req.method === "POST") {
      const pulls = new Set([...state.files.keys(), ...state.reviewComments.keys()]);
      const answer = answerGraphql(state.threads, pulls, body, login);
      return send(res, answer.status, answer.body);
    }
    // `GET /repos/{owner}/{repo}/collaborators/{username}/permission`: 404 for a non-collaborator
    const permission = /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/.exec(url.pathname);
    if (permission && req.method === "GET") {
      const level = state.collaborators.get(`${permission[1]}/${permission[2]}`)?.get(permission[3]!);
      if (!level)
        return send(res, 404, {
          message: `${permission[3]} is not a user`,
          documentation_url: `${DOCS}/collaborators/collaborators#get-repository-permissions-for-a-user`,
          status: "404",
        });
      return send(res, 200, { permission: level, role_name: level, user: { login: permission[3] } });
    }
    const reaction = /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)\/reactions$/.exec(url.pathname);
    if (reaction && req.method === "POST") {
      const docs = `${DOCS}/reactions/reactions#create-reaction-for-an-issue-comment`;
      const id = Number(reaction[3]);
      const exists = [...state.comments.entries()].some(
        ([thread, comments]) =>
          thread.startsWith(`${reaction[1]}/${reaction[2]}#`) && comments.some((c) => c.id === id),
      );
      if (!exists) return send(res, 404, { message: "Not Found", documentation_url: docs, status: "404" });
      const content = (body as { content?: unknown })?.content;
      const allowed = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];
      if (typeof content !== "string" || !allowed.includes(content))
        return send(res, 422, {
          message: "Validation Failed",
          errors: [{ resource: "Reaction", field: "content", code: "invalid" }],
          documentation_url: docs,
          status: "422",
        });
      const list = state.reactions.get(id) ?? [];
      const again = list.find((r) => r.content === content && r.user === login);
      nextId += 1;
      const made = { id: nextId, content, user: { login, id: userIds.get(login) ?? 0 } };
      if (!again) list.push({ content, user: login });
      state.reactions.set(id, list);
      // GitHub answers 200 when this user already reacted so, 201 when the reaction is new
      return send(res, again ? 200 : 201, made);
    }
    const reviewReactions = {
      method: req.method ?? "GET",
      url,
      body,
      user,
      exists: (repo: string, id: number) => reviewCommentOf(repo, id) !== undefined,
      sendPage,
      send: (status: number, answer: unknown) =>
        status === 204 ? res.writeHead(204).end() : send(res, status, answer),
      nextId: () => nextId++,
    };
    if (answerReviewReactions(state.reviewReactions, reviewReactions, base)) return;
    const edit = /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)$/.exec(url.pathname);
    if (edit) {
      const found = [...state.comments.entries()]
        .filter(([thread]) => thread.startsWith(`${edit[1]}/${edit[2]}#`))
        .flatMap(([, comments]) => comments)
        .find((comment) => comment.id === Number(edit[3]));
      if (!found)
        return send(res, 404, {
          message: "Not Found",
          documentation_url: `${DOCS}/issues/comments#update-an-issue-comment`,
          status: "404",
        });
      if (req.method === "GET") return send(res, 200, found);
      if (req.method === "DELETE") {
        for (const comments of state.comments.values()) {
          const index = comments.indexOf(found);
          if (index >= 0) comments.splice(index, 1);
        }
        res.writeHead(204);
        return res.end();
      }
      const text = (body as { body?: unknown })?.body;
      if (req.method !== "PATCH" || typeof text !== "string" || text === "")
        return send(res, 422, {
          message: "Validation Failed",
          errors: [{ resource: "IssueComment", field: "body", code: "missing_field" }],
          documentation_url: `${DOCS}/issues/comments#update-an-issue-comment`,
          status: "422",
        });
      found.body = text;
      found.updated_at = new Date().toISOString();
      if (dropped()) return;
      return send(res, 200, found);
    }
    const repoRead = /^\/repos\/([^/]+)\/([^/]+)(\/pulls)?$/.exec(url.pathname);
    if (repoRead && req.method === "GET") {
      const name = `${repoRead[1]}/${repoRead[2]}`;
      if (options.unreadable?.includes(name))
        return send(res, 403, {
          message: "Resource not accessible by integration",
          documentation_url: `${DOCS}/repos/repos#get-a-repository`,
          status: "403",
        });
      const hosted = options.repos?.[name];
      if (!hosted) return send(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
      if (!repoRead[3]) return send(res, 200, hosted.repository);
      const state = url.searchParams.get("state") ?? "open";
      return sendPage(hosted.pulls.filter((pull) => state === "all" || pull.state === state));
    }
    // one pull request, as `GET /repos/{owner}/{repo}/pulls/{pull_number}` answers it
    const pullRead = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/.exec(url.pathname);
    if (pullRead && req.method === "GET") {
      const hosted = options.repos?.[`${pullRead[1]}/${pullRead[2]}`];
      const pull = hosted?.pulls.find((entry) => entry.number === Number(pullRead[3]));
      if (!pull)
        return send(res, 404, {
          message: "Not Found",
          documentation_url: `${DOCS}/pulls/pulls#get-a-pull-request`,
          status: "404",
        });
      return send(res, 200, pull);
    }
    // one review comment, a thread's first or a reply, as `GET .../pulls/comments/{comment_id}` answers it
    const reviewRead = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/comments\/(\d+)$/.exec(url.pathname);
    if (reviewRead && req.method === "GET") {
      const found = reviewCommentOf(`${reviewRead[1]}/${reviewRead[2]}`, Number(reviewRead[3]));
      if (!found)
        return send(res, 404, {
          message: "Not Found",
          documentation_url: `${DOCS}/pulls/comments#get-a-review-comment-for-a-pull-request`,
          status: "404",
        });
      const { line_text: _, ...comment } = found;
      return send(res, 200, comment);
    }
    const match =
      /^\/repos\/([^/]+)\/([^/]+)\/(issues|pulls)\/(\d+)\/(comments|reviews|files)(?:\/(\d+)\/replies)?$/.exec(
        url.pathname,
      );
    if (!match) return send(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
    const [, owner, repo, kind, number, what, replyTo] = match;
    const thread = `${owner}/${repo}#${number}`;
    if (options.locked?.includes(`${owner}/${repo}`) && req.method === "POST") {
      return send(res, 403, {
        message: "Resource not accessible by integration",
        documentation_url: `${DOCS}/issues/comments#create-an-issue-comment`,
        status: "403",
      });
    }
    const created = (posted: Posted) => {
      const suffix = url.pathname;
      for (const entry of lose) {
        if (suffix.endsWith(entry)) {
          lose.delete(entry);
          // stored, but the answer never reaches the client: a proxy in between failed
          return send(res, 502, { message: "Server Error" });
        }
      }
      return send(res, 201, posted);
    };
    const stamp = () => ({ id: nextId++, node_id: `N_${nextId}`, created_at: new Date().toISOString() });

    if (kind === "issues" && what === "comments") {
      if (req.method === "GET") return sendPage(list(state.comments, thread));
      const text = (body as { body?: unknown })?.body;
      if (req.method !== "POST" || typeof text !== "string" || text === "")
        return send(res, 422, {
          message: "Validation Failed",
          errors: [{ field: "body", code: "missing_field" }],
        });
      const ids = stamp();
      const posted: Posted = {
        ...ids,
        body: text,
        user,
        url: `${base}/repos/${owner}/${repo}/issues/comments/${ids.id}`,
        html_url: `https://github.test/${owner}/${repo}/pull/${number}#issuecomment-${ids.id}`,
        issue_url: `${base}/repos/${owner}/${repo}/issues/${number}`,
        author_association: "NONE",
      };
      list(state.comments, thread).push(posted);
      return created(posted);
    }
    if (kind === "pulls" && what === "files" && req.method === "GET")
      return sendPage(state.files.get(thread) ?? []);
    if (kind === "pulls" && what === "reviews") {
      if (req.method === "GET") return sendPage(list(state.reviews, thread));
      const review = body as {
        commit_id?: unknown;
        event?: unknown;
        body?: unknown;
        comments?: { path: string; line: number; side?: string; body: string }[];
      };
      if (
        !["COMMENT", "APPROVE", "REQUEST_CHANGES"].includes(String(review?.event)) ||
        typeof review.body !== "string"
      )
        return send(res, 422, {
          message: "Validation Failed",
          errors: [{ field: "event", code: "invalid" }],
        });
      const files = state.files.get(thread) ?? [];
      for (const comment of review.comments ?? []) {
        const file = files.find((entry) => entry.filename === comment.path);
        // the real API refuses the whole review when one line is not part of the diff
        if (!file || !rightLines(file.patch).has(comment.line)) {
          return send(res, 422, {
            message: "Unprocessable Entity",
            errors: ["Line could not be resolved"],
            documentation_url: `${DOCS}/pulls/reviews#create-a-review-for-a-pull-request`,
            status: "422",
          });
        }
      }
      const ids = stamp();
      const posted: Posted = {
        ...ids,
        body: review.body,
        user,
        state:
          review.event === "APPROVE"
            ? "APPROVED"
            : review.event === "REQUEST_CHANGES"
              ? "CHANGES_REQUESTED"
              : "COMMENTED",
        commit_id: review.commit_id,
        comments: review.comments ?? [],
        html_url: `https://github.test/${owner}/${repo}/pull/${number}#pullrequestreview-${ids.id}`,
        pull_request_url: `${base}/repos/${owner}/${repo}/pulls/${number}`,
        submitted_at: ids.created_at,
      };
      list(state.reviews, thread).push(posted);
      for (const comment of review.comments ?? []) {
        const file = files.find((entry) => entry.filename === comment.path)!;
        const inline = stamp();
        list(state.reviewComments, thread).push({
          ...inline,
          body: comment.body,
          user,
          path: comment.path,
          line: comment.line,
          original_line: comment.line,
          side: comment.side ?? "RIGHT",
          commit_id: review.commit_id,
          pull_request_review_id: ids.id,
          diff_hunk: file.patch ?? "",
          line_text: rightText(file.patch).get(comment.line),
          html_url: `https://github.test/${owner}/${repo}/pull/${number}#discussion_r${inline.id}`,
        });
        state.threads.push({
          id: `PRRT_${inline.id}`,
          pull: thread,
          isResolved: false,
          isOutdated: false,
          reviewIds: [ids.id],
          commentId: inline.id,
        });
      }
      return created(posted);
    }
    if (kind === "pulls" && what === "comments") {
      if (req.method === "GET" && !replyTo)
        return sendPage(
          [...list(state.reviewComments, thread), ...list(state.replies, thread)]
            .sort((a, b) => a.id - b.id)
            .map(({ line_text: _, ...comment }) => comment),
        );
      const text = (body as { body?: unknown })?.body;
      if (req.method !== "POST" || !replyTo || typeof text !== "string")
        return send(res, 422, { message: "Validation Failed" });
      const ids = stamp();
      const posted: Posted = {
        ...ids,
        ...onLinesOf(reviewCommentOf(`${owner}/${repo}`, Number(replyTo))),
        body: text,
        user,
        in_reply_to_id: Number(replyTo),
        pull_request_review_id: nextId++,
        // GitHub states how the author stands to the repository: a collaborator's, or nobody's
        author_association: state.collaborators.get(`${owner}/${repo}`)?.has(login) ? "COLLABORATOR" : "NONE",
        html_url: `https://github.test/${owner}/${repo}/pull/${number}#discussion_r${ids.id}`,
      };
      list(state.replies, thread).push(posted);
      return created(posted);
    }
    return send(res, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => send(res, 500, { message: String(error) }));
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  base = `http://${host}:${(server.address() as { port: number }).port}`;
  return {
    url: base,
    ...state,
    exchanges: apps.exchanges,
    loseAnswerOnce: (suffix) => lose.add(suffix),
    dropAnswerOnce: (method, suffix) => drop.add(`${method} ${suffix}`),
    reviewComment: (pull, comment) => {
      const [repo, number] = pull.split("#");
      const id = nextId++;
      const user = { login: comment.login, id: userIds.get(comment.login) ?? 42, type: "User" };
      const root = comment.inReplyTo === undefined ? undefined : reviewCommentOf(repo!, comment.inReplyTo);
      const file = state.files.get(pull)?.find((entry) => entry.filename === comment.path);
      const posted: Posted = {
        id,
        node_id: `N_${id}`,
        created_at: new Date().toISOString(),
        ...(root
          ? onLinesOf(root)
          : { path: comment.path, line: comment.line, original_line: comment.line, side: "RIGHT" }),
        ...(root ? { in_reply_to_id: root.id } : { diff_hunk: file?.patch ?? "" }),
        body: comment.body,
        user,
        pull_request_review_id: nextId++,
        author_association: comment.association,
        html_url: `https://github.test/${repo}/pull/${number}#discussion_r${id}`,
      };
      if (root) list(state.replies, pull).push(posted);
      else {
        list(state.reviewComments, pull).push(posted);
        const reviewIds = [posted.pull_request_review_id as number];
        state.threads.push({
          id: `PRRT_${id}`,
          pull,
          isResolved: false,
          isOutdated: false,
          reviewIds,
          commentId: id,
        });
      }
      return posted;
    },
    pushFiles: (thread, files) => {
      state.files.set(thread, files);
      for (const comment of state.reviewComments.get(thread) ?? []) {
        if (comment.line === null || comment.line === undefined) continue;
        const file = files.find((entry) => entry.filename === comment.path);
        if (file && rightText(file.patch).get(comment.line as number) === comment.line_text) continue;
        comment.line = null;
        comment.position = null;
        const open = state.threads.find((entry) => entry.id === `PRRT_${comment.id}`);
        if (open) open.isOutdated = true;
      }
    },
    failOnce: (suffix) => fail.add(suffix),
    exhaustRateLimit: () => {
      rate.used = RATE_LIMIT;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function suffixOf(entry: string): string {
  return entry.slice(entry.indexOf(" ") + 1);
}

/** New-file lines of a unified diff with their text. */
function rightText(patch: string | undefined): Map<number, string> {
  const lines = new Map<number, string>();
  let right = 0;
  for (const line of (patch ?? "").split("\n")) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(line);
    if (hunk) right = Number(hunk[1]);
    else if (line.startsWith("-")) continue;
    else if (right > 0) lines.set(right++, line.slice(1));
  }
  return lines;
}

/** New-file lines of a unified diff, as GitHub resolves `line` on the RIGHT side. */
function rightLines(patch: string | undefined): Set<number> {
  const lines = new Set<number>();
  let right = 0;
  for (const line of (patch ?? "").split("\n")) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(line);
    if (hunk) right = Number(hunk[1]);
    else if (line.startsWith("-")) continue;
    else if (right > 0) lines.add(right++);
  }
  return lines;
}
