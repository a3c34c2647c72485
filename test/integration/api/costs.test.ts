import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { seedCosts } from "./costs-seed.ts";
import { type ApiHarness, apiConfig, startApi, tokensBlock, VIA_PROXY } from "./support.ts";

/**
 * `GET /costs` on the real ingress app over a seeded database: the tasks' recorded usage summed
 * per repository, pipeline and author, the total and the days, within the window asked for.
 */
let db: TestDatabase;
let api: ApiHarness;
const READER = "secret-reader";

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  api = await startApi(
    db.url,
    apiConfig({ tokens: tokensBlock({ reader: ["triggers:read"], evaluator: ["evals:write"] }) }),
  );
  await seedCosts(api.pool);
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface CostLine {
  key?: string | null;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  costUsd: number | null;
}

/** The answer, or the error of a refused request. */
interface CostsAnswer {
  by: string;
  rows: CostLine[];
  total: CostLine;
  days: CostLine[];
  error: { message: string };
}

const costs = async (query: string, token = READER) => {
  const answer = await api.request("GET", `/costs${query}`, { token });
  return { status: answer.status, body: (await answer.json()) as CostsAnswer };
};

describe("GET /costs", () => {
  it("sums the runs of the last 30 days per repository, costliest first; an unpriced group says null", async () => {
    const { status, body } = await costs("?by=repo");
    expect(status).toBe(200);
    expect(body.by).toBe("repo");
    expect(body.rows).toEqual([
      {
        key: "acme/widgets",
        runs: 2,
        inputTokens: 16_000,
        outputTokens: 3_500,
        tokens: 19_500,
        costUsd: expect.closeTo(0.1, 9),
      },
      { key: "acme/gadgets", runs: 1, inputTokens: 3_000, outputTokens: 300, tokens: 3_300, costUsd: null },
    ]);
    expect(body.total).toEqual({
      runs: 3,
      inputTokens: 19_000,
      outputTokens: 3_800,
      tokens: 22_800,
      costUsd: expect.closeTo(0.1, 9),
    });
    expect(body.days).toHaveLength(3);
    expect(body.days.map((day) => day.costUsd)).toEqual([
      expect.closeTo(0.06, 9),
      expect.closeTo(0.04, 9),
      null,
    ]);
  });

  it("groups by pipeline (the default) and by the event's author", async () => {
    const pipelines = await costs("");
    expect(pipelines.body.by).toBe("pipeline");
    expect(pipelines.body.rows.map((row) => [row.key, row.runs])).toEqual([
      ["pr-review", 2],
      ["nightly", 1],
    ]);
    const authors = await costs("?by=author");
    expect(authors.body.rows.map((row) => [row.key, row.tokens, row.costUsd])).toEqual([
      ["dana", 15_300, expect.closeTo(0.06, 9)],
      ["lee", 7_500, expect.closeTo(0.04, 9)],
    ]);
  });

  it("a longer window takes in the older run; a bad `by` or `since` is a 400 naming the fix", async () => {
    const all = await costs("?by=pipeline&since=60d");
    expect(all.body.rows[0]).toMatchObject({ key: "pr-review", runs: 3, costUsd: expect.closeTo(1.1, 9) });
    const by = await costs("?by=team");
    expect(by.status).toBe(400);
    expect(by.body.error.message).toBe('"by" must be one of repo, pipeline, author');
    const since = await costs("?since=last-week");
    expect(since.status).toBe(400);
    expect(since.body.error.message).toContain('"since" must be an ISO timestamp or a duration');
  });

  it("needs triggers:read", async () => {
    expect((await costs("", "secret-evaluator")).status).toBe(403);
    // through the reverse proxy: a bare loopback caller of a local install needs no token
    expect((await api.request("GET", "/costs", { headers: VIA_PROXY })).status).toBe(401);
  });
});
