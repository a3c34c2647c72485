/**
 * The fake GitHub's reactions on pull request review comments, as api.github.com answers them:
 * `GET /repos/{o}/{r}/pulls/comments/{comment_id}/reactions` (paged, `content` filters one kind),
 * `POST` the same path (201 for a new reaction, 200 with the one this user already gave, 422 for an
 * unknown content), `DELETE …/reactions/{reaction_id}` (204), and 404 for a comment the repository
 * does not hold. A reaction is GitHub's object: id, node_id, user (a simple user), content, created_at.
 */
export interface FakeReaction {
  id: number;
  node_id: string;
  user: Record<string, unknown> & { login: string; id: number };
  content: string;
  created_at: string;
}

const CONTENTS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];
const DOCS = "https://docs.github.com/rest/reactions/reactions";
const PATH = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/comments\/(\d+)\/reactions(?:\/(\d+))?$/;

export interface ReactionsRequest {
  method: string;
  url: URL;
  body: unknown;
  /** the account the request's token acts as */
  user: { login: string; id: number; type: string };
  /** whether the repository holds a review comment with this id */
  exists(repo: string, commentId: number): boolean;
  /** GitHub's paging: the page of `items` the request's `page`/`per_page` name, with its `Link` */
  sendPage(items: unknown[]): void;
  send(status: number, body: unknown): void;
  nextId(): number;
}

/** Answers the request when it is a review comment's reactions route; false when it is not. */
export function answerReviewReactions(
  reactions: Map<number, FakeReaction[]>,
  request: ReactionsRequest,
  base: string,
): boolean {
  const match = PATH.exec(request.url.pathname);
  if (!match) return false;
  const [, owner, repo, comment, reactionId] = match;
  const commentId = Number(comment);
  const { method, send } = request;
  const docs = (what: string) => `${DOCS}#${what}-reaction-for-a-pull-request-review-comment`;
  if (!request.exists(`${owner}/${repo}`, commentId)) {
    send(404, { message: "Not Found", documentation_url: docs("list"), status: "404" });
    return true;
  }
  const list = reactions.get(commentId) ?? [];
  if (method === "GET" && !reactionId) {
    const content = request.url.searchParams.get("content");
    request.sendPage(content ? list.filter((reaction) => reaction.content === content) : list);
    return true;
  }
  if (method === "DELETE" && reactionId) {
    reactions.set(
      commentId,
      list.filter((reaction) => String(reaction.id) !== reactionId),
    );
    send(204, "");
    return true;
  }
  if (method !== "POST" || reactionId) {
    send(404, { message: "Not Found", documentation_url: docs("list"), status: "404" });
    return true;
  }
  const content = (request.body as { content?: unknown } | undefined)?.content;
  if (typeof content !== "string" || !CONTENTS.includes(content)) {
    send(422, {
      message: "Validation Failed",
      errors: [{ resource: "Reaction", field: "content", code: "invalid" }],
      documentation_url: docs("create"),
      status: "422",
    });
    return true;
  }
  const again = list.find(
    (reaction) => reaction.content === content && reaction.user.login === request.user.login,
  );
  if (again) {
    send(200, again);
    return true;
  }
  const id = request.nextId();
  const made: FakeReaction = {
    id,
    node_id: `REA_${id}`,
    user: simpleUser(request.user, base),
    content,
    created_at: new Date().toISOString(),
  };
  reactions.set(commentId, [...list, made]);
  send(201, made);
  return true;
}

/** GitHub's simple-user object for a login. */
function simpleUser(user: { login: string; id: number; type: string }, base: string) {
  const api = `${base}/users/${user.login}`;
  return {
    login: user.login,
    id: user.id,
    node_id: `U_${user.id}`,
    avatar_url: `https://avatars.github.test/u/${user.id}?v=4`,
    gravatar_id: "",
    url: api,
    html_url: `https://github.test/${user.login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: user.type,
    site_admin: false,
  };
}
