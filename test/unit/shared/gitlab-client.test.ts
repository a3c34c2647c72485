import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitlabApiError, gitlabClient } from "../../../shared/codehost/gitlab.ts";

/**
 * svc's GitLab client over a loopback server that answers each path from a script: a write is
 * never sent twice (gitbeaker's own handler resends a POST on a 502, which posts a note twice when
 * GitLab wrote it and only the answer was lost), a read is tried again on a 5xx, a 429 is waited out.
 */
describe("the GitLab client's retries", () => {
  let server: Server;
  let url: string;
  const hits = new Map<string, number>();
  const script = new Map<string, { status: number; body: unknown; headers?: Record<string, string> }[]>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const key = `${req.method} ${new URL(req.url ?? "/", "http://x").pathname}`;
      hits.set(key, (hits.get(key) ?? 0) + 1);
      const next = script.get(key)?.shift() ?? { status: 200, body: { id: 1, username: "svc-bot" } };
      res.writeHead(next.status, { "content-type": "application/json", ...next.headers });
      res.end(JSON.stringify(next.body));
      req.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v4`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends a write once: a 502 is handed back, never resent", async () => {
    const path = "POST /api/v4/projects/acme%2Fwidgets/merge_requests/5/notes";
    script.set(path, [{ status: 502, body: { message: "502 Bad Gateway" } }]);
    const client = gitlabClient({ apiUrl: url, token: "glpat-x" });
    const error = await client.MergeRequestNotes.create("acme/widgets", 5, "hello").catch((e) => e);
    expect(error).toBeInstanceOf(GitlabApiError);
    expect(error).toMatchObject({ status: 502, hostMessage: "502 Bad Gateway" });
    expect(hits.get(path)).toBe(1);
  });

  it("tries a read again on a 5xx, and a refused request (4xx) is final with GitLab's message", async () => {
    const path = "GET /api/v4/user";
    script.set(path, [{ status: 503, body: { message: "503 Service Unavailable" } }]);
    const client = gitlabClient({ apiUrl: url, token: "glpat-x" });
    expect(await client.Users.showCurrentUser()).toMatchObject({ username: "svc-bot" });
    expect(hits.get(path)).toBe(2);
    const missing = "GET /api/v4/projects/acme%2Fgone";
    script.set(missing, [{ status: 404, body: { message: "404 Project Not Found" } }]);
    await expect(client.Projects.show("acme/gone")).rejects.toMatchObject({
      status: 404,
      hostMessage: "404 Project Not Found",
    });
    expect(hits.get(missing)).toBe(1);
  });

  it("waits out a 429 with a short Retry-After, even for a write (GitLab wrote nothing)", async () => {
    const path = "POST /api/v4/projects/acme%2Fwidgets/merge_requests/6/notes";
    script.set(path, [{ status: 429, body: { message: "Retry later" }, headers: { "retry-after": "0" } }]);
    const client = gitlabClient({ apiUrl: url, token: "glpat-x" });
    await client.MergeRequestNotes.create("acme/widgets", 6, "hello");
    expect(hits.get(path)).toBe(2);
  });

  it("a brief client tries a read once", async () => {
    const path = "GET /api/v4/projects/acme%2Fbrief/members/all/7";
    script.set(path, [{ status: 503, body: { message: "503 Service Unavailable" } }]);
    const client = gitlabClient({ apiUrl: url, token: "glpat-x", brief: true });
    await expect(
      client.ProjectMembers.show("acme/brief", 7, { includeInherited: true }),
    ).rejects.toMatchObject({
      status: 503,
    });
    expect(hits.get(path)).toBe(1);
  });
});
