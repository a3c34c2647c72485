import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { newId } from "../../../shared/ids.ts";
import { type FakeGitHub, startFakeGitHub } from "../../e2e/outputs/fake-github.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock } from "./support.ts";

/**
 * The repo routes against the loopback GitHub fake, which serves the repository and pull request
 * of the project's real webhook fixture: listing with default branches, pagination of the open
 * pull requests, their runs joined in, and each refusal of the code host as a clear answer.
 */
const FIXTURE = join(
  import.meta.dirname,
  "../../../ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json",
);
const HELLO = "Codertocat/Hello-World";
const GOOD_TOKEN = "ghs_default_identity_token";
const READER = "secret-reader";
const INVOKER = "secret-invoker";
const PASTED = "ghp_pasted_into_clone_url";

let db: TestDatabase;
let github: FakeGitHub;
let api: ApiHarness;
let payload: { pull_request: Record<string, unknown>; repository: Record<string, unknown> };

function config(token: string): ConfigSnapshot {
  const base = apiConfig({
    tokens: tokensBlock({ reader: ["repos:read"], invoker: ["pipelines:invoke"] }),
  });
  return {
    ...base,
    repos: {
      [HELLO]: { cloneUrl: "https://github.com/Codertocat/Hello-World.git", configured: true },
      "acme/locked": { cloneUrl: "https://github.com/acme/locked.git", configured: true },
      // a credential pasted into clone_url: the worker sends it as a header, GET /repos never shows it
      "acme/gone": {
        cloneUrl: `https://x-access-token:${PASTED}@github.com/acme/gone.git`,
        configured: true,
      },
    },
    codehost: { apiUrl: github.url, token: { kind: "inline", value: token }, principals: {} },
  };
}

/** 150 open pull requests made from the fixture's (the fixture's own is #2), and one closed. */
function pulls() {
  const open = Array.from({ length: 150 }, (_, index) => ({
    ...payload.pull_request,
    number: 150 - index,
    title: 150 - index === 2 ? payload.pull_request.title : `Change ${150 - index}`,
    html_url: `https://github.com/${HELLO}/pull/${150 - index}`,
    state: "open",
  }));
  return [...open, { ...payload.pull_request, number: 151, state: "closed" }];
}

async function seedRunOnFixturePull(): Promise<{ trigger: string; invocation: string }> {
  const trigger = newId("trigger");
  const workload = newId("workload");
  const invocation = newId("invocation");
  await api.pool.query(
    `INSERT INTO svc.triggers (id, kind, source, event_name, status, payload)
     VALUES ($1, 'codehost', 'github', 'pull_request.opened', 'error', $2)`,
    [trigger, JSON.stringify(payload)],
  );
  await api.pool.query(
    `INSERT INTO svc.workloads (id, trigger_id, pipeline, status, pipeline_version) VALUES ($1, $2, 'pr-review', 'error', '1.3.0')`,
    [workload, trigger],
  );
  await api.pool.query(
    `INSERT INTO svc.invocations (id, workload_id, status, diagnostic, target) VALUES ($1, $2, 'failed', $3, 'local-agent')`,
    [invocation, workload, JSON.stringify({ code: "output_failed", message: "publishing review failed" })],
  );
  await api.pool.query(
    `INSERT INTO svc.output_deliveries (invocation_id, output_key, handler, status, remote_url)
     VALUES ($1, 'summary', 'codehost.comment', 'sent', 'https://github.com/Codertocat/Hello-World/pull/2#issuecomment-1')`,
    [invocation],
  );
  return { trigger, invocation };
}

beforeAll(async () => {
  payload = JSON.parse(await readFile(FIXTURE, "utf8"));
  github = await startFakeGitHub({
    users: { [GOOD_TOKEN]: "svc-bot" },
    unreadable: ["acme/locked"],
    repos: { [HELLO]: { repository: payload.repository, pulls: pulls() } },
  });
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(db.url, config(GOOD_TOKEN));
});

afterAll(async () => {
  await api?.close();
  await github?.close();
  await db?.drop();
});

const get = async (path: string, harness = api) => {
  const response = await harness.request("GET", path, { token: READER });
  const text = await response.text();
  expect(text).not.toContain(GOOD_TOKEN);
  expect(text).not.toContain(PASTED);
  return { status: response.status, body: JSON.parse(text), headers: response.headers };
};

// before the rate limit is spent (the last test of GET /repos spends the token's for good)
describe("POST /repos/:owner/:name/pulls/:number/rehearse", () => {
  const rehearse = async (path: string, body: unknown = {}, token = INVOKER) => {
    const response = await api.request("POST", path, { token, body });
    const text = await response.text();
    expect(text).not.toContain(GOOD_TOKEN);
    return { status: response.status, body: JSON.parse(text) };
  };

  it("records the pull request's synchronize as GitHub answers it, with its outputs held back", async () => {
    const { status, body } = await rehearse(`/repos/${HELLO}/pulls/2/rehearse`);
    expect(status).toBe(202);
    const head = (payload.pull_request.head as { sha: string }).sha;
    expect(body).toMatchObject({ repo: HELLO, number: 2, head });
    const { rows } = await api.pool.query(
      "SELECT kind, source, event_name, hold_outputs, payload FROM svc.triggers WHERE id = $1",
      [body.trigger],
    );
    expect(rows[0]).toMatchObject({
      kind: "codehost",
      source: "doctor",
      event_name: "pull_request.synchronize",
      hold_outputs: true,
    });
    // built from GitHub's answer: its author association, head and base repository, not the caller's
    const event = rows[0].payload;
    expect(event.action).toBe("synchronize");
    expect(event.number).toBe(2);
    expect(event.pull_request.author_association).toBe(payload.pull_request.author_association);
    expect(event.pull_request.head.sha).toBe(head);
    expect(event.repository.full_name).toBe(HELLO);
    expect(github.requests.some((r) => r.method === "GET" && r.path === `/repos/${HELLO}/pulls/2`)).toBe(
      true,
    );
  });

  it("refuses what it cannot rehearse, recording nothing", async () => {
    const count = async () =>
      (await api.pool.query("SELECT count(*)::int AS n FROM svc.triggers WHERE source = 'doctor'")).rows[0].n;
    const before = await count();
    const closed = await rehearse(`/repos/${HELLO}/pulls/151/rehearse`);
    expect(closed.status).toBe(400);
    expect(closed.body.error.message).toBe(`${HELLO}#151 is closed: only an open pull request is pushed to`);
    const missing = await rehearse(`/repos/${HELLO}/pulls/999/rehearse`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toBe(`GitHub has no pull request ${HELLO}#999 that svc can see`);
    expect((await rehearse("/repos/acme/unknown/pulls/2/rehearse")).status).toBe(404);
    const word = await rehearse(`/repos/${HELLO}/pulls/two/rehearse`);
    expect(word.status).toBe(400);
    expect(word.body.error.message).toBe('"two" is not a pull request number');
    // the caller cannot supply the event, nor any part of it
    const forged = await rehearse(`/repos/${HELLO}/pulls/2/rehearse`, { payload: { pull_request: {} } });
    expect(forged.status).toBe(400);
    // repos:read alone does not fire anything
    expect((await rehearse(`/repos/${HELLO}/pulls/2/rehearse`, {}, READER)).status).toBe(403);
    expect(await count()).toBe(before);
  });
});

describe("GET /repos", () => {
  it("lists daemon.yaml's repos with the default branch, svc's last run, and a refusal per repo", async () => {
    const { trigger } = await seedRunOnFixturePull();
    const { status, body } = await get("/repos");
    expect(status).toBe(200);
    expect(body.repos.map((repo: { name: string }) => repo.name)).toEqual([
      HELLO,
      "acme/gone",
      "acme/locked",
    ]);
    const [hello, gone, locked] = body.repos;
    expect(hello).toMatchObject({
      defaultBranch: "master",
      error: null,
      lastRun: { trigger, kind: "codehost", event: "pull_request.opened", status: "error" },
    });
    expect(gone).toMatchObject({
      cloneUrl: "https://github.com/acme/gone.git",
      defaultBranch: null,
      lastRun: null,
      error: { code: "codehost_not_found" },
    });
    expect(gone.error.message).toContain("codehost.token (the default identity)");
    expect(locked.error.code).toBe("codehost_forbidden");
    expect(locked.error.message).toBe(
      "the code host refused codehost.token (the default identity) access to acme/locked with 403 (Resource not accessible by integration); grant that identity read access to acme/locked (contents and pull requests)",
    );
  });

  it("caches a default branch: a second listing does not ask the code host again", async () => {
    const asked = () => github.requests.filter((r) => r.path === `/repos/${HELLO}`).length;
    const before = asked();
    await get("/repos");
    expect(asked()).toBe(before);
    expect(github.requests.find((r) => r.path === `/repos/${HELLO}`)!.authorization).toBe(
      `token ${GOOD_TOKEN}`,
    );
  });
});

describe("GET /repos/:owner/:name/pulls", () => {
  it("reads every page of open pull requests and joins svc's runs to each", async () => {
    const { body, status } = await get(`/repos/${HELLO}/pulls`);
    expect(status).toBe(200);
    expect(body.pulls).toHaveLength(150);
    expect(body.pulls.map((pull: { number: number }) => pull.number)).not.toContain(151);
    const pages = github.requests.filter((r) => r.path === `/repos/${HELLO}/pulls`);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    const fixturePull = body.pulls.find((pull: { number: number }) => pull.number === 2);
    expect(fixturePull).toMatchObject({
      title: payload.pull_request.title,
      author: "Codertocat",
      head: { ref: "changes" },
      base: "master",
      pipelines: [
        {
          pipeline: "pr-review",
          runs: 1,
          last: {
            version: "1.3.0",
            status: "failed",
            diagnostic: { code: "output_failed", message: "publishing review failed" },
            outputs: ["https://github.com/Codertocat/Hello-World/pull/2#issuecomment-1"],
          },
        },
      ],
    });
    expect(body.pulls.find((pull: { number: number }) => pull.number === 3).pipelines).toEqual([]);
  });

  it("retries a 5xx of the code host (Octokit's retry) and answers as if nothing happened", async () => {
    github.failOnce(`/repos/${HELLO}/pulls`);
    const before = github.requests.length;
    const { status, body } = await get(`/repos/${HELLO}/pulls`);
    expect(status).toBe(200);
    expect(body.pulls).toHaveLength(150);
    // the failed page, its retry and the second page
    expect(github.requests.length - before).toBe(3);
  });

  it("answers 404 for a repository daemon.yaml does not configure, without asking the code host", async () => {
    const before = github.requests.length;
    const { status, body } = await get("/repos/someone/else/pulls");
    expect(status).toBe(404);
    expect(body.error.code).toBe("not_found");
    expect(github.requests.length).toBe(before);
  });

  it("answers a 403 of the code host with a 502 that names the identity and the fix", async () => {
    const { status, body } = await get("/repos/acme/locked/pulls");
    expect(status).toBe(502);
    expect(body.error.code).toBe("codehost_forbidden");
    expect(body.error.message).toContain("grant that identity read access to acme/locked");
  });

  it("answers a 404 of the code host for a configured repository with a 404 naming the fix", async () => {
    const { status, body } = await get("/repos/acme/gone/pulls");
    expect(status).toBe(404);
    expect(body.error.message).toContain('fix repos."acme/gone" in daemon.yaml');
  });

  it("answers bad credentials (401) with a 502 that names codehost.token, never the token", async () => {
    const wrong = await startApi(db.url, config("ghs_revoked_token_value"));
    try {
      const { status, body } = await get(`/repos/${HELLO}/pulls`, wrong);
      expect(status).toBe(502);
      expect(body.error.code).toBe("codehost_unauthorized");
      expect(body.error.message).toBe(
        "the code host refused codehost.token (the default identity) with 401 (Bad credentials); store a valid token in codehost.token and restart the daemon",
      );
      expect(JSON.stringify(body)).not.toContain("ghs_revoked_token_value");
    } finally {
      await wrong.close();
    }
  });

  it("answers a spent rate limit at once with 503 and when to retry", async () => {
    github.exhaustRateLimit();
    const { status, body } = await get(`/repos/${HELLO}/pulls`);
    expect(status).toBe(503);
    expect(body.error.code).toBe("codehost_rate_limited");
    expect(body.error.message).toMatch(/API rate limit exceeded .*retry after \d+s/);
    expect(body.error.retryAfter).toBeGreaterThan(3000);
  });
});

describe("GET /repos as a GitHub App", () => {
  it("reads with the installation token of each repository's installation, one exchange for many reads, and names an uninstalled repository", async () => {
    const { generateKeyPairSync } = await import("node:crypto");
    const keys = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const appHub = await startFakeGitHub({
      users: {},
      repos: { [HELLO]: { repository: payload.repository, pulls: pulls() } },
      apps: [
        {
          id: 31,
          slug: "svc-app",
          publicKey: keys.publicKey,
          installations: [{ id: 9, account: "Codertocat", repos: [HELLO] }],
        },
      ],
    });
    const base = config("unused");
    const asApp = await startApi(db.url, {
      ...base,
      codehost: {
        apiUrl: appHub.url,
        app: { id: 31, privateKey: { kind: "inline", value: keys.privateKey } },
        principals: {},
      },
    });
    try {
      const pullsRead = await get(`/repos/${HELLO}/pulls`, asApp);
      expect(pullsRead.status).toBe(200);
      expect(pullsRead.body.pulls).toHaveLength(150);
      const listing = await get("/repos", asApp);
      const gone = listing.body.repos.find((repo: { name: string }) => repo.name === "acme/gone");
      expect(gone.error).toMatchObject({ code: "codehost_not_found" });
      expect(gone.error.message).toContain("GitHub App 31 is not installed on acme/gone");
      expect(appHub.exchanges).toHaveLength(1);
      const reads = appHub.requests.filter(
        (request) => request.path.startsWith(`/repos/${HELLO}`) && !request.path.endsWith("/installation"),
      );
      expect(new Set(reads.map((request) => request.authorization))).toEqual(
        new Set([`token ${appHub.exchanges[0]!.token}`]),
      );
      expect(JSON.stringify(listing.body)).not.toContain(appHub.exchanges[0]!.token);
    } finally {
      await asApp.close();
      await appHub.close();
    }
  });
});
