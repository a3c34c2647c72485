import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type ApiHarness, apiConfig, seedLineage, startApi } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { ROOT, type Run, svc } from "./support.ts";

/**
 * `svc repo …` and `svc eval …` as real CLI processes against the daemon API on loopback, whose
 * code host is the GitHub fake serving the project's pull_request fixture.
 */
const HELLO = "Codertocat/Hello-World";
let db: TestDatabase;
let github: FakeGitHub;
let api: ApiHarness;
let home: string;
let invocation: string;

const env = () => ({ HOME: home, SVC_DAEMON_URL: api.url });

function ok(run: Run): Run {
  expect(run.code, run.stderr).toBe(0);
  return run;
}

beforeAll(async () => {
  const payload = JSON.parse(
    await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"), "utf8"),
  );
  github = await startFakeGitHub({
    users: { "ghs-default": "svc-bot" },
    repos: {
      [HELLO]: { repository: payload.repository, pulls: [{ ...payload.pull_request, state: "open" }] },
    },
  });
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  // a local install: loopback bind, no tokens, so the CLI needs no credential
  api = await startApi(db.url, {
    ...apiConfig(null),
    repos: { [HELLO]: { cloneUrl: "https://github.com/Codertocat/Hello-World.git", configured: true } },
    codehost: { apiUrl: github.url, token: { kind: "inline", value: "ghs-default" }, principals: {} },
  });
  ({ invocation } = await seedLineage(api.pool));
  await api.pool.query("UPDATE svc.workloads SET pipeline_version = '1.0.0'");
  await api.pool.query("UPDATE svc.invocations SET started_at = now() - interval '2 s', finished_at = now()");
  home = await mkdtemp(join(tmpdir(), "svc-eval-cli-"));
});

afterAll(async () => {
  await api?.close();
  await github?.close();
  await db?.drop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("svc repo", () => {
  it("list prints a table of the configured repos with their default branch", async () => {
    const run = ok(await svc(["repo", "list"], env()));
    expect(run.stdout).toMatch(/^REPO\s+BRANCH\s+LAST RUN\s+STATUS\s+WHEN$/m);
    expect(run.stdout).toMatch(/^Codertocat\/Hello-World\s+master\s+never/m);
  });

  it("pulls lists the open pull requests; --json is the API's answer", async () => {
    const text = ok(await svc(["repo", "pulls", HELLO], env()));
    expect(text.stdout).toMatch(/^#2\s+Update the README with new information\.\s+Codertocat\s+\(no run\)/m);
    const json = JSON.parse(ok(await svc(["repo", "pulls", HELLO, "--json"], env())).stdout);
    expect(json.pulls.map((pull: { number: number }) => pull.number)).toEqual([2]);
    const unknown = await svc(["repo", "pulls", "acme/unknown"], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no such repository");
  });
});

describe("svc eval", () => {
  it("add curates a run, list shows it, stats and compare read the statistics", async () => {
    const added = ok(
      await svc(
        ["eval", "add", invocation, "--expect", "pass", "--note", "<b>sure</b>", "--tag", "smoke"],
        env(),
      ),
    );
    expect(added.stdout).toMatch(/^evc_[a-z2-7]+: plain 1\.0\.0 on local-agent, ran pass, expected pass$/m);
    const listed = ok(await svc(["eval", "list", "--pipeline", "plain"], env()));
    expect(listed.stdout).toMatch(/^ID\s+PIPELINE\s+VERSION\s+RAN\s+EXPECTED\s+TAGS\s+NOTES$/m);
    expect(listed.stdout).toMatch(/plain\s+1\.0\.0\s+pass\s+pass\s+smoke\s+<b>sure<\/b>/);
    const stats = ok(await svc(["eval", "stats", "--pipeline", "plain"], env()));
    expect(stats.stdout).toMatch(
      /^1\.0\.0\s+local-agent\s+1\s+100\.0% \[20\.7–100\.0\] \(1\/1\)\s.*\s2000ms\s+2000ms\s+-\s+-$/m,
    );
    expect(stats.stdout).toContain("curated cases agreeing with the expectation: 100.0%");
    const compared = ok(
      await svc(
        ["eval", "compare", "--pipeline", "plain", "--a", "version:1.0.0", "--b", "cases:smoke"],
        env(),
      ),
    );
    expect(compared.stdout).toMatch(/^completed rate\s+100\.0%/m);
    expect(compared.stdout).toContain("too small to conclude: cohort a has 1 runs and cohort b has 1");
    const refused = await svc(["eval", "compare", "--pipeline", "plain", "--a", "v1", "--b", "cases"], env());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('"a" must be a cohort such as version:1.2.0');
  });

  it("compare and stats may leave out --pipeline when the daemon runs exactly one", async () => {
    const base = apiConfig(null);
    const single = await startApi(db.url, { ...base, pipelines: { plain: base.pipelines.plain! } });
    try {
      const run = ok(
        await svc(["eval", "compare", "--a", "version:1.0.0", "--b", "target:local-agent", "--json"], {
          ...env(),
          SVC_DAEMON_URL: single.url,
        }),
      );
      expect(JSON.parse(run.stdout)).toMatchObject({ pipeline: "plain", a: { runs: 1 }, b: { runs: 1 } });
    } finally {
      await single.close();
    }
    const ambiguous = await svc(["eval", "stats"], env());
    expect(ambiguous.code).toBe(1);
    // oclif wraps a long error over lines that start with " ›"
    expect(ambiguous.stderr.replace(/\s+›?\s*/g, " ")).toContain(
      "the daemon runs 2 pipelines (nightly, plain)",
    );
  });

  it("show, edit and delete a case", async () => {
    const { evals } = JSON.parse(ok(await svc(["eval", "list", "--json"], env())).stdout);
    const id = evals[0].id as string;
    const edited = ok(
      await svc(
        ["eval", "edit", id, "--expect", "fail", "--expect-result", '{"summary":"ok"}', "--tag", "edge"],
        env(),
      ),
    );
    expect(edited.stdout).toContain('expected:  fail with {"summary":"ok"}');
    expect(edited.stdout).toContain("tags:      edge");
    const shown = ok(await svc(["eval", "show", id], env()));
    expect(shown.stdout).toContain(`run:       ${invocation}, webhook deploy-hook from deploy-hook`);
    const nothing = await svc(["eval", "edit", id], env());
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain("nothing to change");
    // put the case back as the next test expects it
    ok(
      await svc(["eval", "edit", id, "--expect", "pass", "--expect-result", "null", "--tag", "smoke"], env()),
    );
    const spare = JSON.parse(
      ok(await svc(["eval", "add", invocation, "--expect", "fail", "--json"], env())).stdout,
    ).eval.id;
    expect(ok(await svc(["eval", "delete", spare], env())).stdout).toBe(`deleted ${spare}\n`);
    const again = await svc(["eval", "delete", spare], env());
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no such eval case");
  });

  it("run replays the curated cases and prints the compare command; --json answers the eval run", async () => {
    const run = JSON.parse(
      ok(await svc(["eval", "run", "--pipeline", "plain", "--tag", "smoke", "--json"], env())).stdout,
    );
    expect(run.evalRun).toMatchObject({ pipeline: "plain", pipelineVersion: "1.0.0" });
    expect(run.evalRun.cases).toHaveLength(1);
    const text = ok(await svc(["eval", "run", "--pipeline", "plain"], env()));
    expect(text.stdout).toMatch(/svc eval compare --pipeline plain --a original:evr_\w+ --b run:evr_\w+/);
  });
});

describe("help", () => {
  for (const command of [
    ["repo", "list"],
    ["repo", "pulls"],
    ["eval", "add"],
    ["eval", "list"],
    ["eval", "stats"],
    ["eval", "compare"],
    ["eval", "run"],
    ["eval", "show"],
    ["eval", "edit"],
    ["eval", "delete"],
  ]) {
    it(`svc ${command.join(" ")} --help shows a description and examples`, async () => {
      const run = ok(await svc([...command, "--help"], { HOME: home }));
      expect(run.stdout).toContain("DESCRIPTION");
      expect(run.stdout).toContain("EXAMPLES");
      expect(run.stdout).toContain(`$ svc ${command.join(" ")}`);
    });
  }
});
