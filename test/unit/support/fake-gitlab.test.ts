import type { IncomingMessage, ServerResponse } from "node:http";
import { GitbeakerRequestError, Gitlab } from "@gitbeaker/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeGitLab,
  type FakeMergeRequest,
  type FakeProject,
  startFakeGitLab,
} from "../../e2e/gitlab/fake-gitlab.ts";

const BASE = "a".repeat(40);
const START = "b".repeat(40);
const HEAD = "c".repeat(40);
const NEXT_HEAD = "d".repeat(40);

// old 1..4, new 1..5: context 1/1, removed old 2, added new 2 and 3, context 3/4 and 4/5
const APP_DIFF = `@@ -1,4 +1,5 @@
 const a = 1;
-const b = 2;
+const b = 3;
+const c = 4;
 export { a };
 // end
`;

const USERS = {
  alice: { id: 11, username: "alice", name: "Alice Developer" },
  bob: { id: 12, username: "bob", name: "Bob Author" },
  rita: { id: 13, username: "rita", name: "Rita Reporter" },
  olga: { id: 14, username: "olga", name: "Olga Outsider" },
  bot: { id: 15, username: "project_101_bot_3f2a", name: "svc", bot: true },
  carol: { id: 16, username: "carol" },
  eve: { id: 17, username: "eve" },
};

const TOKENS = {
  "glpat-alice": USERS.alice,
  "glpat-bob": USERS.bob,
  "glpat-rita": USERS.rita,
  "glpat-olga": USERS.olga,
  "glpat-bot": { ...USERS.bot, scopes: ["api", "read_repository"], expires_at: "2999-01-01" },
  "glpat-read": { ...USERS.carol, scopes: ["read_api"] },
  "glpat-expired": { ...USERS.eve, expires_at: "2020-01-01" },
};

function mergeRequest(iid: number, author: number): FakeMergeRequest {
  return {
    iid,
    title: `Change ${iid}`,
    author_id: author,
    source_branch: `feature-${iid}`,
    target_branch: "main",
    diff_refs: { base_sha: BASE, start_sha: START, head_sha: HEAD },
    diffs: [
      { old_path: "src/app.ts", new_path: "src/app.ts", diff: APP_DIFF },
      {
        old_path: "docs/new.md",
        new_path: "docs/new.md",
        new_file: true,
        diff: "@@ -0,0 +1,2 @@\n+# New\n+text\n",
      },
    ],
  };
}

function projects(): FakeProject[] {
  return [
    {
      id: 101,
      path_with_namespace: "group/project",
      members: { 11: 30, 12: 30, 13: 20, 15: 40, 16: 30, 17: 30 },
      mergeRequests: [mergeRequest(7, USERS.bob.id)],
    },
    {
      id: 202,
      path_with_namespace: "group/sub/nested",
      default_branch: "trunk",
      members: { 11: 40 },
      mergeRequests: [mergeRequest(1, USERS.alice.id)],
    },
    {
      id: 303,
      path_with_namespace: "oss/public",
      visibility: "public",
      members: { 11: 50 },
      mergeRequests: [mergeRequest(3, USERS.alice.id)],
    },
  ];
}

const MR = "/projects/group%2Fproject/merge_requests/7";

let fake: FakeGitLab;

beforeEach(async () => {
  fake = await startFakeGitLab({ tokens: TOKENS, projects: projects() });
});

afterEach(async () => {
  await fake.close();
});

async function api(
  path: string,
  options: { token?: string; method?: string; body?: unknown; bearer?: boolean } = {},
) {
  const headers: Record<string, string> = {};
  const token = "token" in options ? options.token : "glpat-alice";
  if (token !== undefined)
    if (options.bearer) headers.authorization = `Bearer ${token}`;
    else headers["private-token"] = token;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${fake.apiUrl}${path}`, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read whatever GitLab answered
  const body: any = await response.json();
  return { status: response.status, headers: response.headers, body };
}

const position = (
  lines: { old_line?: number; new_line?: number },
  overrides: Record<string, unknown> = {},
) => ({
  position_type: "text",
  base_sha: BASE,
  start_sha: START,
  head_sha: HEAD,
  old_path: "src/app.ts",
  new_path: "src/app.ts",
  ...lines,
  ...overrides,
});

const LINE_CODE_ERROR = {
  message: `400 Bad request - Note {:line_code=>["can't be blank", "must be a valid line code"]}`,
};

describe("fake GitLab: authentication", () => {
  it("refuses a missing or unknown token with GitLab's 401 and records every request", async () => {
    expect(await api("/user", { token: undefined })).toMatchObject({
      status: 401,
      body: { message: "401 Unauthorized" },
    });
    expect(await api("/user", { token: "glpat-nope" })).toMatchObject({
      status: 401,
      body: { message: "401 Unauthorized" },
    });
    expect(await api("/user", { token: "glpat-nope", bearer: true })).toMatchObject({ status: 401 });
    expect(fake.requests.map((r) => [r.method, r.path, r.token])).toEqual([
      ["GET", "/api/v4/user", undefined],
      ["GET", "/api/v4/user", "glpat-nope"],
      ["GET", "/api/v4/user", "glpat-nope"],
    ]);
  });

  it("takes PRIVATE-TOKEN or a Bearer token and answers the user and token", async () => {
    const user = await api("/user", { token: "glpat-bot", bearer: true });
    expect(user.status).toBe(200);
    expect(user.body).toMatchObject({
      id: 15,
      username: "project_101_bot_3f2a",
      name: "svc",
      state: "active",
      bot: true,
      web_url: `${fake.url}/project_101_bot_3f2a`,
    });
    const self = await api("/personal_access_tokens/self", { token: "glpat-bot" });
    expect(self).toMatchObject({
      status: 200,
      body: {
        revoked: false,
        active: true,
        user_id: 15,
        scopes: ["api", "read_repository"],
        expires_at: "2999-01-01",
      },
    });
    expect(typeof self.body.id).toBe("number");
    expect((await api("/user")).body).toMatchObject({ id: 11, username: "alice", bot: false });
  });

  it("refuses an expired token, and a read_api token's writes, as GitLab's OAuth guard does", async () => {
    const expired = await api("/user", { token: "glpat-expired" });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({
      error: "invalid_token",
      error_description: "Token is expired. You can either do re-authorization or token refresh.",
    });
    expect(expired.headers.get("www-authenticate")).toMatch(/^Bearer realm="The API", error="invalid_token"/);
    expect((await api(MR, { token: "glpat-read" })).status).toBe(200);
    const write = await api(`${MR}/notes`, { token: "glpat-read", body: { body: "hi" } });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ error: "insufficient_scope", scope: "api" });
    expect(fake.notes("group/project", 7)).toEqual([]);
  });

  it("answers an unknown route 404 with GitLab's catch-all body, before any authentication", async () => {
    expect(await api("/projects/101/pipelines", { token: undefined })).toEqual(
      expect.objectContaining({ status: 404, body: { error: "404 Not Found" } }),
    );
    expect((await api(`${MR}/approve`)).body).toEqual({ error: "404 Not Found" });
  });
});

describe("fake GitLab: projects and members", () => {
  it("finds a project by id or URL-encoded path, nested groups included", async () => {
    const byId = await api("/projects/101");
    const byPath = await api("/projects/group%2Fproject");
    expect(byId.body).toEqual(byPath.body);
    expect(byId.body).toMatchObject({
      id: 101,
      name: "project",
      path: "project",
      path_with_namespace: "group/project",
      default_branch: "main",
      visibility: "private",
      web_url: `${fake.url}/group/project`,
      http_url_to_repo: `${fake.url}/group/project.git`,
      permissions: { project_access: { access_level: 30, notification_level: 3 }, group_access: null },
    });
    const nested = await api("/projects/group%2Fsub%2Fnested");
    expect(nested.body).toMatchObject({
      id: 202,
      default_branch: "trunk",
      namespace: { full_path: "group/sub" },
    });
    expect(nested.body.permissions.project_access.access_level).toBe(40);
  });

  it("hides a private project from a non-member, and shows a public one with no access", async () => {
    expect(await api("/projects/group%2Fproject", { token: "glpat-olga" })).toMatchObject({
      status: 404,
      body: { message: "404 Project Not Found" },
    });
    expect((await api("/projects/nobody%2Fnothing")).body).toEqual({ message: "404 Project Not Found" });
    const open = await api("/projects/303", { token: "glpat-olga" });
    expect(open.status).toBe(200);
    expect(open.body.permissions).toEqual({ project_access: null, group_access: null });
  });

  it("answers a member's access level, and 404 for a user who is not one", async () => {
    expect(await api("/projects/group%2Fproject/members/all/13")).toMatchObject({
      status: 200,
      body: { id: 13, username: "rita", access_level: 20, state: "active" },
    });
    expect(await api("/projects/group%2Fproject/members/all/14")).toMatchObject({
      status: 404,
      body: { message: "404 Not found" },
    });
  });
});

describe("fake GitLab: merge requests", () => {
  it("answers the merge request and its diffs, and 404 for one that does not exist", async () => {
    const mr = await api(MR);
    expect(mr.body).toMatchObject({
      id: 101007,
      iid: 7,
      project_id: 101,
      title: "Change 7",
      state: "opened",
      author: { id: 12, username: "bob" },
      source_branch: "feature-7",
      target_branch: "main",
      source_project_id: 101,
      target_project_id: 101,
      sha: HEAD,
      diff_refs: { base_sha: BASE, start_sha: START, head_sha: HEAD },
      web_url: `${fake.url}/group/project/-/merge_requests/7`,
    });
    const diffs = await api(`${MR}/diffs`);
    expect(diffs.body.map((d: { new_path: string }) => d.new_path)).toEqual(["src/app.ts", "docs/new.md"]);
    expect(diffs.body[1]).toMatchObject({
      new_file: true,
      renamed_file: false,
      deleted_file: false,
      a_mode: "0",
    });
    expect(await api("/projects/group%2Fproject/merge_requests/99")).toMatchObject({
      status: 404,
      body: { message: "404 Not found" },
    });
  });

  it("posts a note as an individual-note discussion, and refuses a missing or blank body", async () => {
    const posted = await api(`${MR}/notes`, { body: { body: "Looks good" } });
    expect(posted.status).toBe(201);
    expect(posted.body).toMatchObject({
      type: null,
      body: "Looks good",
      author: { id: 11, username: "alice", name: "Alice Developer" },
      system: false,
      noteable_id: 101007,
      noteable_type: "MergeRequest",
      noteable_iid: 7,
      resolvable: false,
    });
    // GitLab shows the resolved fields only on resolvable notes
    expect(posted.body).not.toHaveProperty("resolved");
    expect(Number.isNaN(Date.parse(posted.body.created_at))).toBe(false);
    const [discussion] = fake.discussions("group/project", 7);
    expect(discussion).toMatchObject({ individual_note: true, notes: [{ id: posted.body.id }] });
    expect(discussion!.id).toMatch(/^[0-9a-f]{40}$/);
    expect(await api(`${MR}/notes`, { body: { body: "  " } })).toMatchObject({
      status: 400,
      body: { message: `400 Bad request - Note {:note=>["can't be blank"]}` },
    });
    expect(await api(`${MR}/notes`, { body: {} })).toMatchObject({
      status: 400,
      body: { error: "body is missing" },
    });
    expect(fake.notes("group/project", 7).map((note) => note.body)).toEqual(["Looks good"]);
  });

  it("lists notes newest first by default, honours sort and order_by, and pages with GitLab's headers", async () => {
    for (const text of ["one", "two", "three", "four", "five"])
      await api(`${MR}/notes`, { body: { body: text } });
    expect((await api(`${MR}/notes`)).body.map((n: { body: string }) => n.body)).toEqual([
      "five",
      "four",
      "three",
      "two",
      "one",
    ]);
    const first = fake.notes("group/project", 7)[0]!;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await api(`${MR}/notes/${first.id}`, { method: "PUT", body: { body: "one, edited" } });
    const byUpdate = await api(`${MR}/notes?order_by=updated_at&sort=desc`);
    expect(byUpdate.body[0].body).toBe("one, edited");

    const page1 = await api(`${MR}/notes?sort=asc&per_page=2`);
    expect(page1.body.map((n: { body: string }) => n.body)).toEqual(["one, edited", "two"]);
    expect(
      Object.fromEntries(
        ["x-page", "x-per-page", "x-total", "x-total-pages", "x-next-page", "x-prev-page"].map((h) => [
          h,
          page1.headers.get(h),
        ]),
      ),
    ).toEqual({
      "x-page": "1",
      "x-per-page": "2",
      "x-total": "5",
      "x-total-pages": "3",
      "x-next-page": "2",
      "x-prev-page": "",
    });
    const link = page1.headers.get("link")!;
    expect(link).toContain(`<${fake.apiUrl}${MR}/notes?sort=asc&per_page=2&page=2>; rel="next"`);
    expect(link).toContain('rel="first"');
    expect(link).toContain(`page=3>; rel="last"`);
    const next = /<([^>]+)>; rel="next"/.exec(link)![1]!;
    const page2 = await fetch(next, { headers: { "private-token": "glpat-alice" } });
    expect(((await page2.json()) as { body: string }[]).map((n) => n.body)).toEqual(["three", "four"]);
    const page3 = await api(`${MR}/notes?sort=asc&per_page=2&page=3`);
    expect(page3.body.map((n: { body: string }) => n.body)).toEqual(["five"]);
    expect(page3.headers.get("x-next-page")).toBe("");
    expect(page3.headers.get("link")).not.toContain('rel="next"');
    expect((await api(`${MR}/notes?sort=sideways`)).body).toEqual({
      error: "sort does not have a valid value",
    });
  });

  it("lets only a note's author edit it", async () => {
    const { body: note } = await api(`${MR}/notes`, { body: { body: "draft" } });
    const edited = await api(`${MR}/notes/${note.id}`, { method: "PUT", body: { body: "final" } });
    expect(edited).toMatchObject({ status: 200, body: { id: note.id, body: "final" } });
    expect(
      await api(`${MR}/notes/${note.id}`, { method: "PUT", token: "glpat-bob", body: { body: "mine" } }),
    ).toMatchObject({
      status: 403,
      body: { message: "403 Forbidden" },
    });
    expect(await api(`${MR}/notes/99999`, { method: "PUT", body: { body: "x" } })).toMatchObject({
      status: 404,
      body: { message: "404 Not found" },
    });
    expect(await api(`${MR}/notes/${note.id}`, { method: "PUT", body: { body: "" } })).toMatchObject({
      status: 400,
      body: { error: "body is empty" },
    });
    expect(fake.notes("group/project", 7)[0]!.body).toBe("final");
  });

  it("lets anyone who can read a public project note, and nobody outside a private one", async () => {
    const outside = await api("/projects/oss%2Fpublic/merge_requests/3/notes", {
      token: "glpat-olga",
      body: { body: "drive-by" },
    });
    expect(outside).toMatchObject({ status: 201, body: { author: { username: "olga" } } });
    expect(await api(`${MR}/notes`, { token: "glpat-olga", body: { body: "sneaky" } })).toMatchObject({
      status: 404,
      body: { message: "404 Project Not Found" },
    });
  });
});

describe("fake GitLab: discussions", () => {
  it("opens a plain discussion, resolvable and unresolved", async () => {
    const opened = await api(`${MR}/discussions`, { body: { body: "Why this?" } });
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({
      individual_note: false,
      notes: [
        { type: "DiscussionNote", body: "Why this?", resolvable: true, resolved: false, resolved_by: null },
      ],
    });
    expect(opened.body.id).toMatch(/^[0-9a-f]{40}$/);
    expect(opened.body.notes[0]).not.toHaveProperty("position");
  });

  it("places a diff note on an added, a removed or an unchanged line as the diff shows it", async () => {
    const added = await api(`${MR}/discussions`, {
      body: { body: "added", position: position({ new_line: 3 }) },
    });
    expect(added.status).toBe(201);
    expect(added.body.notes[0]).toMatchObject({
      type: "DiffNote",
      resolvable: true,
      resolved: false,
      position: { ...position({ new_line: 3 }), old_line: null, line_range: null },
    });
    const removed = await api(`${MR}/discussions`, {
      body: { body: "removed", position: position({ old_line: 2 }) },
    });
    expect(removed.status).toBe(201);
    const context = await api(`${MR}/discussions`, {
      body: { body: "context", position: position({ old_line: 3, new_line: 4 }) },
    });
    expect(context.status).toBe(201);
    const newFile = await api(`${MR}/discussions`, {
      body: {
        body: "new file",
        position: position({ new_line: 2 }, { old_path: "docs/new.md", new_path: "docs/new.md" }),
      },
    });
    expect(newFile.status).toBe(201);
    expect(fake.notes("group/project", 7).map((note) => note.body)).toEqual([
      "added",
      "removed",
      "context",
      "new file",
    ]);
  });

  it("refuses a position the diff does not show with GitLab's line_code 400", async () => {
    const refused = [
      position({ new_line: 4 }), // unchanged line, given by its new number only
      position({ old_line: 1 }), // unchanged line, given by its old number only
      position({ new_line: 40 }),
      position({}),
      position({ new_line: 2 }, { new_path: "src/other.ts", old_path: "src/other.ts" }),
      position({ new_line: 2 }, { head_sha: NEXT_HEAD }),
    ];
    for (const given of refused) {
      const answer = await api(`${MR}/discussions`, { body: { body: "x", position: given } });
      expect([answer.status, answer.body]).toEqual([400, LINE_CODE_ERROR]);
    }
    expect(
      (
        await api(`${MR}/discussions`, {
          body: { body: "x", position: position({ new_line: 2 }, { base_sha: undefined }) },
        })
      ).body,
    ).toEqual({ error: "position[base_sha] is missing" });
    expect(fake.discussions("group/project", 7)).toEqual([]);
  });

  it("replies in a discussion: a diff discussion's replies are diff notes, a plain note becomes a discussion", async () => {
    const diff = await api(`${MR}/discussions`, {
      body: { body: "nit", position: position({ new_line: 2 }) },
    });
    const reply = await api(`${MR}/discussions/${diff.body.id}/notes`, {
      token: "glpat-bob",
      body: { body: "fixed" },
    });
    expect(reply).toMatchObject({
      status: 201,
      body: { type: "DiffNote", body: "fixed", author: { username: "bob" }, position: { new_line: 2 } },
    });
    const plain = await api(`${MR}/notes`, { body: { body: "question" } });
    const [, individual] = fake.discussions("group/project", 7);
    const answer = await api(`${MR}/discussions/${individual!.id}/notes`, { body: { body: "answer" } });
    expect(answer.body).toMatchObject({ type: "DiscussionNote", resolvable: true });
    expect((await api(`${MR}/discussions/${individual!.id}`)).body).toMatchObject({
      individual_note: false,
      notes: [{ id: plain.body.id, type: "DiscussionNote" }, { body: "answer" }],
    });
    expect(await api(`${MR}/discussions/${"f".repeat(40)}/notes`, { body: { body: "lost" } })).toMatchObject({
      status: 404,
      body: { message: "404 Discussion Not Found" },
    });
    expect(fake.notes("group/project", 7).map((note) => note.body)).toEqual([
      "nit",
      "fixed",
      "question",
      "answer",
    ]);
  });

  it("resolves a discussion for a developer or the author, and not for a reporter", async () => {
    const { body: opened } = await api(`${MR}/discussions`, { body: { body: "fix this" } });
    await api(`${MR}/discussions/${opened.id}/notes`, { body: { body: "please" } });
    expect(
      await api(`${MR}/discussions/${opened.id}`, {
        method: "PUT",
        token: "glpat-rita",
        body: { resolved: true },
      }),
    ).toMatchObject({
      status: 403,
      body: { message: "403 Forbidden" },
    });
    const resolved = await api(`${MR}/discussions/${opened.id}`, { method: "PUT", body: { resolved: true } });
    expect(resolved.status).toBe(200);
    expect(resolved.body.notes).toEqual([
      expect.objectContaining({
        resolved: true,
        resolved_by: expect.objectContaining({ username: "alice" }),
      }),
      expect.objectContaining({
        resolved: true,
        resolved_by: expect.objectContaining({ username: "alice" }),
      }),
    ]);
    expect((await api(MR)).body.blocking_discussions_resolved).toBe(true);
    const reopened = await api(`${MR}/discussions/${opened.id}`, {
      method: "PUT",
      token: "glpat-bob",
      body: { resolved: false },
    });
    expect(reopened.body.notes[0]).toMatchObject({ resolved: false, resolved_by: null });
    const plain = await api(`${MR}/notes`, { body: { body: "plain" } });
    const individual = fake.discussions("group/project", 7).find((d) => d.notes[0]!.id === plain.body.id)!;
    expect(
      (await api(`${MR}/discussions/${individual.id}`, { method: "PUT", body: { resolved: true } })).status,
    ).toBe(403);
  });

  it("keeps a discussion's position after a push, and checks new positions against the new version", async () => {
    const before = await api(`${MR}/discussions`, {
      body: { body: "old", position: position({ new_line: 2 }) },
    });
    fake.push("group/project", 7, {
      head_sha: NEXT_HEAD,
      diffs: [
        {
          old_path: "src/app.ts",
          new_path: "src/app.ts",
          diff: "@@ -10,2 +10,3 @@\n ten\n+eleven\n twelve\n",
        },
      ],
    });
    expect((await api(MR)).body).toMatchObject({
      sha: NEXT_HEAD,
      diff_refs: { base_sha: BASE, start_sha: START, head_sha: NEXT_HEAD },
    });
    expect((await api(`${MR}/diffs`)).body).toHaveLength(1);
    const [kept] = fake.discussions("group/project", 7);
    expect(kept!.notes[0]!.position).toEqual(before.body.notes[0].position);
    expect(
      (await api(`${MR}/discussions`, { body: { body: "stale", position: position({ new_line: 2 }) } })).body,
    ).toEqual(LINE_CODE_ERROR);
    const fresh = await api(`${MR}/discussions`, {
      body: { body: "new", position: position({ new_line: 11 }, { head_sha: NEXT_HEAD }) },
    });
    expect(fresh.status).toBe(201);
  });
});

describe("fake GitLab: approvals and award emoji", () => {
  it("approves for a developer once, refusing a reporter (403), the author (401), a stale sha (409)", async () => {
    expect(await api(`${MR}/approve`, { token: "glpat-rita", method: "POST" })).toMatchObject({
      status: 403,
      body: { message: "403 Forbidden" },
    });
    expect(await api(`${MR}/approve`, { token: "glpat-bob", method: "POST" })).toMatchObject({
      status: 401,
      body: { message: "401 Unauthorized" },
    });
    expect(await api(`${MR}/approve`, { body: { sha: NEXT_HEAD } })).toMatchObject({
      status: 409,
      body: { message: `SHA does not match HEAD of source branch: ${HEAD}` },
    });
    const approved = await api(`${MR}/approve`, { body: { sha: HEAD } });
    expect(approved).toMatchObject({
      status: 201,
      body: {
        id: 101007,
        iid: 7,
        project_id: 101,
        approved: true,
        user_has_approved: true,
        user_can_approve: false,
        approved_by: [{ user: { id: 11, username: "alice" } }],
      },
    });
    expect(await api(`${MR}/approve`, { method: "POST" })).toMatchObject({
      status: 401,
      body: { message: "401 Unauthorized" },
    });
    expect((await api(`${MR}/approve`, { token: "glpat-bot", method: "POST" })).status).toBe(201);
    expect(fake.approvals("group/project", 7)).toEqual(["alice", "project_101_bot_3f2a"]);
  });

  it("awards an emoji on a note once per user and name, with GitLab's odd 404 for a repeat", async () => {
    const { body: note } = await api(`${MR}/notes`, { token: "glpat-bob", body: { body: "done" } });
    const award = await api(`${MR}/notes/${note.id}/award_emoji`, { body: { name: "thumbsup" } });
    expect(award).toMatchObject({
      status: 201,
      body: { name: "thumbsup", user: { username: "alice" }, awardable_id: note.id, awardable_type: "Note" },
    });
    expect(await api(`${MR}/notes/${note.id}/award_emoji`, { body: { name: "thumbsup" } })).toMatchObject({
      status: 404,
      body: { message: "404 Award Emoji Name has already been taken Not Found" },
    });
    expect(
      (await api(`${MR}/notes/${note.id}/award_emoji`, { token: "glpat-bot", body: { name: "thumbsup" } }))
        .status,
    ).toBe(201);
    expect((await api(`${MR}/notes/99999/award_emoji`, { body: { name: "eyes" } })).body).toEqual({
      message: "404 Not found",
    });
    expect(fake.awards("group/project", 7)).toEqual([
      { note_id: note.id, name: "thumbsup", user: "alice" },
      { note_id: note.id, name: "thumbsup", user: "project_101_bot_3f2a" },
    ]);
  });
});

describe("fake GitLab: failures and git", () => {
  it("fails the next matching request without doing anything, once", async () => {
    fake.failOnce("POST", "/merge_requests/7/notes");
    expect((await api(`${MR}/notes`)).status).toBe(200);
    expect(await api(`${MR}/notes`, { body: { body: "first try" } })).toMatchObject({
      status: 502,
      body: { message: "502 Bad Gateway" },
    });
    expect(fake.notes("group/project", 7)).toEqual([]);
    expect((await api(`${MR}/notes`, { body: { body: "second try" } })).status).toBe(201);
    expect(fake.notes("group/project", 7).map((note) => note.body)).toEqual(["second try"]);
  });

  it("applies the next matching request and loses its answer, once", async () => {
    fake.loseAnswerOnce("POST", "group/project/merge_requests/7/notes");
    expect(await api(`${MR}/notes`, { body: { body: "" } })).toMatchObject({ status: 400 });
    expect(await api(`${MR}/notes`, { body: { body: "posted" } })).toMatchObject({
      status: 502,
      body: { message: "502 Bad Gateway" },
    });
    expect(fake.notes("group/project", 7).map((note) => note.body)).toEqual(["posted"]);
    expect((await api(`${MR}/notes`, { body: { body: "again" } })).status).toBe(201);
  });

  it("hands git requests to the git handler before reading the body", async () => {
    const seen: string[] = [];
    const git = {
      handle(req: IncomingMessage, res: ServerResponse) {
        if (!req.url?.includes("/info/refs")) return false;
        seen.push(req.url);
        res.writeHead(200, { "content-type": "application/x-git-upload-pack-advertisement" });
        res.end("001e# service=git-upload-pack\n0000");
        return true;
      },
    };
    const withGit = await startFakeGitLab({ tokens: TOKENS, projects: projects(), git });
    try {
      const refs = await fetch(`${withGit.url}/group/project.git/info/refs?service=git-upload-pack`);
      expect(await refs.text()).toContain("service=git-upload-pack");
      expect(seen).toEqual(["/group/project.git/info/refs?service=git-upload-pack"]);
      expect(withGit.requests).toEqual([]);
      const user = await fetch(`${withGit.apiUrl}/user`, { headers: { "private-token": "glpat-alice" } });
      expect(user.status).toBe(200);
    } finally {
      await withGit.close();
    }
  });
});

describe("fake GitLab with @gitbeaker/rest", () => {
  it("serves a real GitLab client: user, notes, diff discussions, pagination, approval, errors", async () => {
    const api = new Gitlab({ host: fake.url, token: "glpat-bot" });
    const me = await api.Users.showCurrentUser();
    expect(me).toMatchObject({ id: 15, username: "project_101_bot_3f2a", bot: true });

    const note = await api.MergeRequestNotes.create("group/project", 7, "Review started");
    expect(note).toMatchObject({ body: "Review started", type: null });

    // gitbeaker posts a position as multipart form fields, position[new_line] and so on
    const diff = await api.MergeRequestDiscussions.create("group/project", 7, "On this line", {
      position: {
        positionType: "text",
        baseSha: BASE,
        startSha: START,
        headSha: HEAD,
        oldPath: "src/app.ts",
        newPath: "src/app.ts",
        newLine: "2",
      },
    });
    expect(diff.notes?.[0]).toMatchObject({ type: "DiffNote", position: { new_line: 2, old_line: null } });
    const bad = api.MergeRequestDiscussions.create("group/project", 7, "Off the diff", {
      position: {
        positionType: "text",
        baseSha: BASE,
        startSha: START,
        headSha: HEAD,
        newPath: "src/app.ts",
        newLine: "4",
      },
    });
    await expect(bad).rejects.toThrow(GitbeakerRequestError);
    await expect(bad).rejects.toThrow(/line_code/);

    for (const n of [1, 2, 3]) await api.MergeRequestDiscussions.create("group/project", 7, `Point ${n}`);
    await api.MergeRequestDiscussions.resolve("group/project", 7, diff.id, true);
    const pagesBefore = fake.requests.filter(
      (r) => r.method === "GET" && r.path.endsWith("/discussions"),
    ).length;
    const all = await api.MergeRequestDiscussions.all("group/project", 7, { perPage: 2 });
    expect(all.map((d) => d.notes?.[0]?.body)).toEqual([
      "Review started",
      "On this line",
      "Point 1",
      "Point 2",
      "Point 3",
    ]);
    expect(all[1]!.notes?.[0]).toMatchObject({ resolved: true });
    const pages = fake.requests.filter((r) => r.method === "GET" && r.path.endsWith("/discussions")).length;
    expect(pages - pagesBefore).toBe(3);
    const expanded = await api.MergeRequestDiscussions.all("group/project", 7, {
      perPage: 2,
      showExpanded: true,
    });
    expect(expanded.paginationInfo).toMatchObject({ total: 5, totalPages: 3, perPage: 2 });

    const approval = await api.MergeRequestApprovals.approve("group/project", 7, { sha: HEAD });
    expect(approval).toMatchObject({ approved: true });
    expect(fake.approvals("group/project", 7)).toEqual(["project_101_bot_3f2a"]);

    const missing = api.MergeRequests.show("group/project", 99);
    await expect(missing).rejects.toThrow("404 Not found");
    await expect(new Gitlab({ host: fake.url, token: "glpat-nope" }).Users.showCurrentUser()).rejects.toThrow(
      "401 Unauthorized",
    );

    // gitbeaker retries a 502, so a failed answer costs it one round and no note
    fake.failOnce("POST", "/merge_requests/7/notes");
    await api.MergeRequestNotes.create("group/project", 7, "After a hiccup");
    expect(fake.notes("group/project", 7).filter((n) => n.body === "After a hiccup")).toHaveLength(1);
  });
});
