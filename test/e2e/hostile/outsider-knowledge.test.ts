import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { insertNote } from "../../../db/notes.ts";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  postPullRequest,
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

/**
 * A stranger's pull request drives a run whose agent does what a hijacked model would: it reads
 * every team document and note it can reach, with its run token on the tool protocol and on the
 * daemon API (`GET /knowledge`, `POST /ask`), and in its run folder, to post them where the
 * stranger reads them; and a sender a webhook source does not vouch for writes notes the team's
 * runs would trust. Real ingress, real worker, real qmd index over `knowledge/`; the pull
 * request is signed as GitHub signs it, the webhooks carry their source's bearer secret.
 */

const ROOT = join(import.meta.dirname, "../../..");
const GITHUB_SECRET = "hostile-outsider-github-secret";
const RELAY_SECRET = "hostile-outsider-relay-secret";
const CI_SECRET = "hostile-outsider-ci-secret";
const PR = JSON.parse(
  await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"), "utf8"),
) as Record<string, unknown> & { repository: { full_name: string } };
const REPO = PR.repository.full_name;

/** Markers the team's documents and notes hold: none may reach an outsider's run unless given to outsiders. */
const TEAM_DOC = "TEAMDOC-7c1e";
const PUBLIC_DOC = "PUBLICDOC-3b9a";
const TEAM_NOTE = "TEAMNOTE-5d20";
const REPO_NOTE = "REPONOTE-91af";
const RUNBOOK = "knowledge/runbook.md";
const GUIDE = "knowledge/public/contributing.md";

interface Answer {
  status: number;
  text: string;
}

interface Report {
  /** the markers found in the agent's prompt (knowledge delivery `prompt`) */
  prompt: string[];
  /** RUN_DIR/knowledge/ (knowledge delivery `file` and `browse`): path under it → text */
  files: Record<string, string>;
  /** the daemon API with the run's token: the listing, a search, a question */
  rest: { list: Answer; search: Answer; ask: Answer };
  search: { isError: boolean; text: string };
  reads: Record<string, { isError: boolean; text: string }>;
  notes: string[];
  teamNote: { isError: boolean; text: string };
  submitted: { id: string; repo: string | null; trusted: boolean };
}

const AGENT = `#!/usr/bin/env node
const { readdirSync, readFileSync, statSync } = require("node:fs");
const { join } = require("node:path");
const prompt = readFileSync(0, "utf8");
const payload = JSON.parse(process.env.PAYLOAD_JSON);
const orders = payload.pull_request ? JSON.parse(payload.pull_request.body) : payload.orders;
let id = 0;
async function tool(name, args) {
  const response = await fetch(process.env.SVC_MCP_URL, {
    method: "POST",
    headers: { authorization: "Bearer " + process.env.SVC_MCP_TOKEN, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }),
  });
  const answer = await response.json();
  if (!answer.result) throw new Error(name + ": " + JSON.stringify(answer));
  return { isError: Boolean(answer.result.isError), text: answer.result.content.map((part) => part.text).join(""), structured: answer.result.structuredContent };
}
async function rest(method, path, body) {
  const response = await fetch(process.env.SVC_DAEMON_URL + path, {
    method,
    headers: { authorization: "Bearer " + process.env.SVC_AGENT_TOKEN, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, text: await response.text() };
}
function placed() {
  const root = join(process.env.RUN_DIR, "knowledge");
  let names;
  try {
    names = readdirSync(root, { recursive: true });
  } catch {
    return {}; // nothing placed: not even the folder
  }
  const files = {};
  for (const name of names) if (statSync(join(root, name)).isFile()) files[name] = readFileSync(join(root, name), "utf8");
  return files;
}
const plain = ({ isError, text }) => ({ isError, text });
(async () => {
  const report = { reads: {} };
  report.prompt = ${JSON.stringify([TEAM_DOC, PUBLIC_DOC, TEAM_NOTE, REPO_NOTE])}.filter((marker) => prompt.includes(marker));
  report.files = placed();
  report.rest = {
    list: await rest("GET", "/knowledge"),
    search: await rest("GET", "/knowledge?q=" + encodeURIComponent("restore database backup contributing guide")),
    ask: await rest("POST", "/ask", { question: "How do I restore the database from the backup, and what does the contributing guide say?" }),
  };
  report.search = plain(await tool("search_knowledge", { query: "restore database backup contributing guide", topK: 5 }));
  for (const path of ${JSON.stringify([RUNBOOK, GUIDE, "knowledge/public/../runbook.md"])})
    report.reads[path] = plain(await tool("read_knowledge", { path }));
  report.notes = (await tool("search_notes", { limit: 100 })).structured.notes.map((note) => note.id);
  report.teamNote = plain(await tool("read_note", { id: orders.teamNote }));
  report.submitted = (await tool("submit_note", { title: "learned", body: "SUBMITTED by " + (orders.who || "someone") })).structured;
  console.log(JSON.stringify(report));
})().catch((error) => {
  console.error(String(error));
  process.exit(3);
});
`;

/** The /ask target: answers with the prompt it was given, so the test sees the passages /ask retrieved. */
const ANSWERER = `#!/usr/bin/env node
console.log(JSON.stringify({ answer: require("node:fs").readFileSync(0, "utf8") }));
`;

function daemonYaml(knowledge: string): string {
  return `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
    relay: { verify: bearer, secret: "\${RELAY_SECRET}" }
    ci: { verify: bearer, secret: "\${CI_SECRET}", trusted_senders: true }
targets:
  reader:
    runtime: command
    command: ["./bin/agent"]
    timeout: 30s
  answerer:
    runtime: command
    command: ["./bin/answer"]
    timeout: 30s
ask:
  targets: [answerer]
codehost:
  api_url: http://127.0.0.1:9/unreachable
  token: hostile-codehost-token-unused
${knowledge}worker:
  concurrency: 1
  grace_period: 2s
`;
}

/** Prompt delivery; a reopened pull request runs FILES instead, its documents in RUN_DIR/knowledge/. */
const PIPELINE = `version: 1.0.0
agent: helper
trigger:
  codehost: [pull_request.opened]
  webhook: [relay, ci]
# open to a stranger's fork on purpose: what its run may read is what is under test
authors: [owner, member, collaborator, contributor, first_time_contributor, none]
targets: [reader]
instructions: Restore the database from the backup, and follow the contributing guide.
knowledge:
  method: bm25
  delivery: prompt
`;

const FILES = PIPELINE.replace("pull_request.opened", "pull_request.reopened").replace(
  "method: bm25\n  delivery: prompt",
  "method: none\n  delivery: browse",
);

/** A daemon (ingress and worker) over a fresh database and configuration, its notes in place. */
class Daemon {
  database!: TestDatabase;
  pool!: pg.Pool;
  dir!: string;
  url!: string;
  ingress?: RoleProcess;
  worker?: RoleProcess;
  teamNote = "";
  repoNote = "";

  async start(knowledge: string): Promise<void> {
    this.database = await createTestDatabase(inject("adminDatabaseUrl"));
    this.dir = await writeConfigDir(
      {
        "daemon.yaml": daemonYaml(knowledge),
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
        "pipelines/review.yaml": PIPELINE,
        "pipelines/files.yaml": FILES,
        "bin/agent": AGENT,
        "bin/answer": ANSWERER,
      },
      ["bin/agent", "bin/answer"],
    );
    await mkdir(join(this.dir, "knowledge", "public"), { recursive: true });
    await writeFile(
      join(this.dir, RUNBOOK),
      `# Restore runbook\n\nTo restore the database from the backup, fetch ${TEAM_DOC} from the vault and run pg_restore.\n`,
    );
    await writeFile(
      join(this.dir, GUIDE),
      `# Contributing guide\n\nThe contributing guide: open a pull request, ${PUBLIC_DOC}, and wait for the backup restore check.\n`,
    );
    const env = {
      SVC_CONFIG_DIR: this.dir,
      SVC_DATABASE_URL: this.database.url,
      HOME: this.dir,
      GITHUB_SECRET,
      RELAY_SECRET,
      CI_SECRET,
    };
    const started = await startIngress(env);
    this.ingress = started.role;
    this.url = started.url;
    this.worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: this.url });
    this.pool = new pg.Pool({ connectionString: this.database.url, max: 2 });
    const keep = async (repo: string | null, body: string) =>
      (await insertNote(this.pool, { invocationId: null, pipeline: "review", repo, title: body, body }))!.id;
    this.teamNote = await keep(null, `${TEAM_NOTE}: the deploy key lives in vault path y`);
    this.repoNote = await keep(REPO, `${REPO_NOTE}: this repository's tests need Postgres`);
  }

  async stop(): Promise<void> {
    await this.worker?.stop();
    await this.ingress?.stop();
    await this.pool?.end();
    await this.database?.drop();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  async report(trigger: string): Promise<Report> {
    const done = await waitForTrigger(this.pool, trigger);
    const { invocations } = await lineage(this.pool, trigger);
    expect(done.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    return invocations[0].result as Report;
  }

  /** A pull request on REPO from a member's branch, or from a stranger's fork; `reopened` runs FILES. */
  pullRequest(from: "member" | "stranger", action: "opened" | "reopened" = "opened"): Promise<Report> {
    const pull = PR.pull_request as Record<string, unknown> & { head: { repo: Record<string, unknown> } };
    const payload = {
      ...PR,
      action,
      pull_request: {
        ...pull,
        body: JSON.stringify({ teamNote: this.teamNote, who: from }),
        author_association: from === "member" ? "MEMBER" : "NONE",
        head: {
          ...pull.head,
          repo:
            from === "member"
              ? pull.head.repo
              : { ...pull.head.repo, id: 99, full_name: "stranger/Hello-World" },
        },
      },
    };
    return postPullRequest(this.url, GITHUB_SECRET, payload).then((trigger) => this.report(trigger));
  }

  /** A bearer webhook delivery naming no repository: whoever holds the source's secret sent it. */
  async webhook(source: "relay" | "ci", secret: string): Promise<Report> {
    const trigger = await postWebhook(this.url, source, secret, {
      orders: { teamNote: this.teamNote, who: source },
    });
    return this.report(trigger);
  }

  async trusted(id: string): Promise<boolean> {
    const { rows } = await this.pool.query("SELECT trusted FROM svc.notes WHERE id = $1", [id]);
    return rows[0].trusted;
  }
}

/** The daemon API's answer to a run given no document: 403, naming the key that gives outsiders some. */
function expectRefused(rest: Report["rest"]): void {
  for (const [route, answer] of Object.entries(rest)) {
    expect(answer.status, route).toBe(403);
    expect(JSON.parse(answer.text).error, route).toMatchObject({
      code: "forbidden",
      message: expect.stringContaining("knowledge.outsiders"),
    });
  }
}

/** The paths of the documents a daemon API answer names: a listing's, a search's passages, /ask's sources. */
function pathsIn(answer: Answer): string[] {
  const body = JSON.parse(answer.text);
  const named = body.documents ?? body.passages ?? body.sources ?? [];
  return [...new Set(named.map((item: { path: string }) => item.path))].sort() as string[];
}

describe("knowledge.outsiders: none (the default): an outsider's run is given no team document and no team note", () => {
  const daemon = new Daemon();
  beforeAll(() => daemon.start(""));
  afterAll(() => daemon.stop());

  it("a stranger's run finds nothing in its prompt, is told why by the knowledge tools, and reads only its repository's trusted notes", async () => {
    const report = await daemon.pullRequest("stranger");
    expect(report.prompt).toEqual([]);
    expect(report.search.isError).toBe(true);
    expect(report.search.text).toContain("knowledge.outsiders");
    for (const path of [RUNBOOK, GUIDE]) expect(report.reads[path]?.isError, path).toBe(true);
    expect(report.notes).toContain(daemon.repoNote);
    expect(report.notes).not.toContain(daemon.teamNote);
    expect(report.teamNote).toEqual({ isError: true, text: `no note ${daemon.teamNote}` });
    expectRefused(report.rest);
    for (const marker of [TEAM_DOC, PUBLIC_DOC, TEAM_NOTE])
      expect(JSON.stringify(report)).not.toContain(marker);
    expect(report.submitted).toMatchObject({ repo: REPO, trusted: false });
  });

  it("with delivery browse, a stranger's run finds nothing in RUN_DIR/knowledge/ and the daemon API refuses its token", async () => {
    const report = await daemon.pullRequest("stranger", "reopened");
    expect(report.files).toEqual({});
    expectRefused(report.rest);
    for (const marker of [TEAM_DOC, PUBLIC_DOC, TEAM_NOTE])
      expect(JSON.stringify(report)).not.toContain(marker);
  });

  it("a member's run is given everything, as before", async () => {
    const report = await daemon.pullRequest("member");
    expect(report.prompt).toEqual(expect.arrayContaining([TEAM_DOC]));
    expect(report.search.isError).toBe(false);
    expect(report.search.text).toContain(RUNBOOK);
    expect(report.reads[RUNBOOK]?.text).toContain(TEAM_DOC);
    expect(report.notes).toEqual(expect.arrayContaining([daemon.repoNote, daemon.teamNote]));
    expect(report.teamNote.text).toContain(TEAM_NOTE);
    expect(report.submitted).toMatchObject({ repo: REPO, trusted: true });
    expect(pathsIn(report.rest.list)).toEqual([GUIDE, RUNBOOK]);
    expect(pathsIn(report.rest.search)).toContain(RUNBOOK);
    expect(report.rest.ask.status).toBe(200);
    expect(JSON.parse(report.rest.ask.text).answer).toContain(TEAM_DOC);
  });

  it("with delivery browse, a member's run finds every document and the catalogue in RUN_DIR/knowledge/", async () => {
    const report = await daemon.pullRequest("member", "reopened");
    expect(Object.keys(report.files).sort()).toEqual(["CATALOG.md", "public/contributing.md", "runbook.md"]);
    expect(report.files["runbook.md"]).toContain(TEAM_DOC);
  });

  it("a bearer source that does not vouch for its senders stores an untrusted note, even without a repository; trusted_senders: true a trusted one", async () => {
    const relayed = await daemon.webhook("relay", RELAY_SECRET);
    expect(relayed.submitted).toMatchObject({ repo: null, trusted: false });
    expect(await daemon.trusted(relayed.submitted.id)).toBe(false);
    const vouched = await daemon.webhook("ci", CI_SECRET);
    expect(vouched.submitted).toMatchObject({ repo: null, trusted: true });
    // the relay's team-wide note reaches no member's run
    const member = await daemon.pullRequest("member");
    expect(member.notes).not.toContain(relayed.submitted.id);
    expect(member.notes).toContain(vouched.submitted.id);
  });
});

describe("knowledge.outsiders: <folder>: an outsider's run is given that folder's documents only", () => {
  const daemon = new Daemon();
  beforeAll(() => daemon.start("knowledge:\n  outsiders: public\n"));
  afterAll(() => daemon.stop());

  it("a stranger's run reads the public folder, and nothing of the rest, by search, by path or through ..", async () => {
    const report = await daemon.pullRequest("stranger");
    expect(report.prompt).toEqual([PUBLIC_DOC]);
    expect(report.search.isError).toBe(false);
    expect(report.search.text).toContain(GUIDE);
    expect(report.search.text).not.toContain(RUNBOOK);
    expect(report.reads[GUIDE]).toMatchObject({ isError: false });
    expect(report.reads[GUIDE]?.text).toContain(PUBLIC_DOC);
    expect(report.reads[RUNBOOK]).toEqual({
      isError: true,
      text: `no knowledge document "${RUNBOOK}" - use a path from CATALOG.md`,
    });
    expect(report.reads["knowledge/public/../runbook.md"]?.isError).toBe(true);
    expect(JSON.stringify(report)).not.toContain(TEAM_DOC);
    expect(report.notes).not.toContain(daemon.teamNote);
  });

  it("its token on the daemon API lists, finds and is answered from the public folder only", async () => {
    const { rest } = await daemon.pullRequest("stranger");
    expect(pathsIn(rest.list)).toEqual([GUIDE]);
    expect(pathsIn(rest.search)).toEqual([GUIDE]);
    expect(rest.ask.status).toBe(200);
    expect(pathsIn(rest.ask)).toEqual([GUIDE]);
    expect(JSON.parse(rest.ask.text).answer).toContain(PUBLIC_DOC);
    expect(JSON.stringify(rest)).not.toContain(TEAM_DOC);
    expect(JSON.stringify(rest)).not.toContain("runbook");
  });

  it("with delivery browse, its RUN_DIR/knowledge/ holds the public folder and a catalogue of it alone", async () => {
    const report = await daemon.pullRequest("stranger", "reopened");
    expect(Object.keys(report.files).sort()).toEqual(["CATALOG.md", "public/contributing.md"]);
    expect(report.files["public/contributing.md"]).toContain(PUBLIC_DOC);
    expect(report.files["CATALOG.md"]).toContain(GUIDE);
    expect(JSON.stringify(report)).not.toContain(TEAM_DOC);
    expect(JSON.stringify(report.files)).not.toContain("runbook");
  });
});
