import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import {
  type ApiHarness,
  apiConfig,
  pipeline,
  startApi,
  tokensBlock,
} from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { rawRequest } from "../../support/raw-http.ts";

/**
 * A web page in the operator's browser attacks the daemon on the operator's own machine. The
 * browser connects from 127.0.0.1 without forwarding headers, exactly like the svc CLI, so only
 * what a browser adds tells the two apart: Origin, Sec-Fetch-Site, and (DNS rebinding) a Host
 * that is the attacker's name. The daemon here is the real ingress app on a real socket over a
 * real database, set up as a local install (no tokens) — the case where `*` opens everything.
 * Requests are sent with node:http so every header, Host included, is exactly what a browser sends.
 */
let db: TestDatabase;
let local: ApiHarness;
let starOff: ApiHarness;
let dir: string;

const EVIL = "https://evil.example";
const FIRE = "/pipelines/nightly-triage/fire";

function config(auth: ConfigSnapshot["auth"], loopbackStar?: boolean): ConfigSnapshot {
  const base = apiConfig(auth);
  return {
    ...base,
    server: { ...base.server, ...(loopbackStar === undefined ? {} : { loopbackStar }) },
    pipelines: { ...base.pipelines, "nightly-triage": pipeline("nightly-triage") },
    hostTools: {
      ...base.hostTools,
      mark: {
        name: "mark",
        description: "create the file named by path",
        input: { path: { type: "string", required: true } },
        exec: "/usr/bin/touch",
        args: ["$path"],
        env: {},
      },
    },
  };
}

interface Answer {
  status: number;
  text: string;
}

/** One request to `harness` on 127.0.0.1 with exactly these headers (Host too: none is added). */
function send(
  harness: ApiHarness,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  const port = Number(new URL(harness.url).port);
  return rawRequest({ host: "127.0.0.1", port, method, path, setHost: false, headers }, body);
}

const hostOf = (harness: ApiHarness) => new URL(harness.url).host;

async function firedTriggers(harness: ApiHarness): Promise<number> {
  const { rows } = await harness.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM svc.triggers WHERE source = 'nightly-triage'",
  );
  return rows[0]!.n;
}

async function drained(harness: ApiHarness): Promise<boolean> {
  const { rowCount } = await harness.pool.query("SELECT 1 FROM svc.daemon_state WHERE key = 'drain'");
  return rowCount === 1;
}

/** A JSON-RPC `tools/call` of host tool `mark`, which creates the file `path` if it runs. */
function markCall(path: string): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "host_mark", arguments: { path } },
  });
}
const MCP_ACCEPT = "application/json, text/event-stream";

/** A refusal that says nothing of the daemon beyond the usual 401. */
function expectUnauthenticated(answer: Answer, because?: string): void {
  expect(answer.status).toBe(401);
  const body = JSON.parse(answer.text) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("unauthenticated");
  // a program on this machine that is refused learns which header did it
  if (because) expect(body.error.message).toContain(because);
  // nothing the attacker sent is echoed back, and nothing of what the route would have answered
  expect(answer.text).not.toContain("evil.example");
  expect(answer.text).not.toContain("trg_");
}

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  dir = await mkdtemp(join(tmpdir(), "svc-hostile-loopback-"));
  local = await startApi(db.url, config(null));
  starOff = await startApi(
    db.url,
    config({ tokens: tokensBlock({ operator: ["triggers:read", "pipelines:invoke"] }) }, false),
  );
});

afterAll(async () => {
  await local?.close();
  await starOff?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe("a web page cannot act through the operator's local daemon", () => {
  it("a cross-site text/plain POST to fire is refused and records no trigger", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      {
        host: hostOf(local),
        origin: EVIL,
        "sec-fetch-site": "cross-site",
        "sec-fetch-mode": "no-cors",
        "content-type": "text/plain;charset=UTF-8",
      },
      '{"args":{}}',
    );
    // the effect first: a request that fired and then answered oddly must fail on what it did
    expect(await firedTriggers(local)).toBe(before);
    expectUnauthenticated(answer, "Origin header");
  });

  // fetch(no-cors) from a sandboxed frame: a form content type, a JSON body, Origin: null
  it("a form POST with Origin: null (sandboxed page, no Sec-Fetch-Site) fires nothing", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      { host: hostOf(local), origin: "null", "content-type": "application/x-www-form-urlencoded" },
      '{"args":{}}',
    );
    expect(await firedTriggers(local)).toBe(before);
    expectUnauthenticated(answer);
  });

  it("a cross-site form POST to /admin/drain does not drain the daemon", async () => {
    const answer = await send(
      local,
      "POST",
      "/admin/drain",
      { host: hostOf(local), origin: EVIL, "content-type": "application/x-www-form-urlencoded" },
      "",
    );
    expect(await drained(local)).toBe(false);
    expectUnauthenticated(answer);
  });

  it("a cross-site GET marked only by Sec-Fetch-Site (no Origin on a no-cors GET) gets 401", async () => {
    const answer = await send(local, "GET", "/triggers", {
      host: hostOf(local),
      "sec-fetch-site": "cross-site",
      "sec-fetch-mode": "no-cors",
    });
    expectUnauthenticated(answer, "Sec-Fetch-Site header");
  });

  it("a page on another port of localhost (same-site) is refused too", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      {
        host: hostOf(local),
        origin: "http://localhost:3000",
        "sec-fetch-site": "same-site",
        "content-type": "text/plain",
      },
      "{}",
    );
    expect(await firedTriggers(local)).toBe(before);
    expectUnauthenticated(answer);
  });
});

describe("DNS rebinding: the attacker's name resolved to 127.0.0.1", () => {
  const rebound = (harness: ApiHarness) => `rebind.evil.example:${new URL(harness.url).port}`;

  it("a same-origin GET /triggers under the attacker's Host gets 401 and no trigger list", async () => {
    const answer = await send(local, "GET", "/triggers", {
      host: rebound(local),
      "sec-fetch-site": "same-origin",
      "sec-fetch-mode": "cors",
    });
    expectUnauthenticated(answer, "Host header");
    expect(answer.text).not.toContain("triggers");
  });

  it("a same-origin JSON POST to fire (Origin = the attacker's own name) fires nothing", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      {
        host: rebound(local),
        origin: `http://${rebound(local)}`,
        "sec-fetch-site": "same-origin",
        "content-type": "application/json",
      },
      '{"args":{}}',
    );
    expect(await firedTriggers(local)).toBe(before);
    expectUnauthenticated(answer);
  });

  it("a same-origin MCP call of a host tool runs nothing", async () => {
    const marker = join(dir, "rebound-marker");
    const answer = await send(
      local,
      "POST",
      "/mcp",
      {
        host: rebound(local),
        origin: `http://${rebound(local)}`,
        "sec-fetch-site": "same-origin",
        "content-type": "application/json",
        accept: MCP_ACCEPT,
      },
      markCall(marker),
    );
    expect(existsSync(marker)).toBe(false);
    expectUnauthenticated(answer);
  });

  it("a Host naming the right address but another port is not this daemon on loopback", async () => {
    const answer = await send(local, "GET", "/whoami", { host: "127.0.0.1:1" });
    expectUnauthenticated(answer);
  });
});

describe("local programs keep `*`", () => {
  it("a plain local POST (Host 127.0.0.1:<port>, no Origin) fires: 202 and one trigger", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      { host: hostOf(local), "content-type": "application/json" },
      '{"args":{}}',
    );
    expect(answer.status).toBe(202);
    const { trigger } = JSON.parse(answer.text) as { trigger: string };
    expect(trigger).toMatch(/^trg_/);
    expect(await firedTriggers(local)).toBe(before + 1);
    const { rows } = await local.pool.query<{ owner: string }>(
      "SELECT owner FROM svc.triggers WHERE id = $1",
      [trigger],
    );
    expect(rows[0]?.owner).toBe("local");
  });

  it("a plain local GET /triggers answers 200, under localhost and 127.0.0.1 alike", async () => {
    const port = new URL(local.url).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      const answer = await send(local, "GET", "/triggers", { host });
      expect(answer.status, host).toBe(200);
    }
  });

  it("a local MCP client calls a host tool (the control for the rebinding case)", async () => {
    const marker = join(dir, "local-marker");
    const answer = await send(
      local,
      "POST",
      "/mcp",
      { host: hostOf(local), "content-type": "application/json", accept: MCP_ACCEPT },
      markCall(marker),
    );
    expect(answer.status).toBe(200);
    expect(existsSync(marker)).toBe(true);
  });

  it("a non-JSON body from a local program gets 415 naming both types, and fires nothing", async () => {
    const before = await firedTriggers(local);
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]) {
      const answer = await send(
        local,
        "POST",
        FIRE,
        { host: hostOf(local), "content-type": type },
        '{"args":{}}',
      );
      expect(answer.status, type).toBe(415);
      const body = JSON.parse(answer.text) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("unsupported_media_type");
      expect(body.error.message).toContain(`(got ${type})`);
      expect(body.error.message).toContain("application/json");
    }
    const none = await send(local, "POST", FIRE, { host: hostOf(local) }, '{"args":{}}');
    expect(none.status).toBe(415);
    expect(none.text).toContain("(got none)");
    expect(await firedTriggers(local)).toBe(before);
  });
});

describe("the daemon's own UI in a browser", () => {
  it("opens for a typed URL (Sec-Fetch-Site: none) and a same-origin navigation", async () => {
    for (const site of ["none", "same-origin"]) {
      const answer = await send(local, "GET", "/ui/triggers", {
        host: hostOf(local),
        "sec-fetch-site": site,
        "sec-fetch-mode": "navigate",
        "sec-fetch-dest": "document",
      });
      expect(answer.status, site).toBe(200);
    }
  });

  it("accepts a request whose Origin is the daemon's own", async () => {
    const before = await firedTriggers(local);
    const answer = await send(
      local,
      "POST",
      FIRE,
      {
        host: hostOf(local),
        origin: `http://${hostOf(local)}`,
        "sec-fetch-site": "same-origin",
        "content-type": "application/json",
      },
      '{"args":{}}',
    );
    expect(answer.status).toBe(202);
    expect(await firedTriggers(local)).toBe(before + 1);
  });

  it("a link followed from another site shows the sign-in page, not the triggers", async () => {
    const answer = await send(local, "GET", "/ui/triggers", {
      host: hostOf(local),
      "sec-fetch-site": "cross-site",
      "sec-fetch-mode": "navigate",
    });
    expect(answer.status).toBe(401);
    expect(answer.text).toContain('action="/ui/login"');
  });
});

describe("server.loopback_star: false (a same-host TCP proxy in front)", () => {
  it("a plain local curl-like request gets 401 and fires nothing", async () => {
    expectUnauthenticated(await send(starOff, "GET", "/triggers", { host: hostOf(starOff) }));
    const before = await firedTriggers(starOff);
    const answer = await send(
      starOff,
      "POST",
      FIRE,
      { host: hostOf(starOff), "content-type": "application/json" },
      '{"args":{}}',
    );
    expect(await firedTriggers(starOff)).toBe(before);
    expectUnauthenticated(answer);
  });

  it("a token still works", async () => {
    const answer = await send(starOff, "GET", "/triggers", {
      host: hostOf(starOff),
      authorization: "Bearer secret-operator",
    });
    expect(answer.status).toBe(200);
  });
});
