import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type ApiHarness, apiConfig, startApi } from "../../integration/api/support.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { svc } from "./support.ts";

/** `svc notes import|list|show` as real CLI processes against a real database and daemon API. */
let db: TestDatabase;
let dir: string;
let home: string;
let api: ApiHarness;

beforeAll(async () => {
  db = await createTestDatabase(inject("adminDatabaseUrl"));
  dir = await mkdtemp(join(tmpdir(), "svc-notes-"));
  home = await mkdtemp(join(tmpdir(), "svc-notes-home-"));
  await writeFile(
    join(dir, "deploys.md"),
    "---\ntitle: Deploys need the lock\ntags: [deploy, ci]\npipeline: release\ndate: 2025-03-01\n---\nTake the deploy lock first.\n",
  );
  await writeFile(join(dir, "plain.md"), "# Flaky test\n\nretry `auth.spec` once before failing.\n");
  await mkdir(join(dir, "old"));
  await writeFile(join(dir, "old", "nested.markdown"), "no frontmatter, no heading\n");
  await writeFile(join(dir, "ignored.txt"), "not a note");
  api = await startApi(db.url, apiConfig(null));
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

describe("svc notes", () => {
  const env = () => ({ SVC_DATABASE_URL: db.url, HOME: home, SVC_DAEMON_URL: api.url });

  it("import stores every Markdown file once; a second run imports 0 and leaves the files in place", async () => {
    const first = await svc(["notes", "import", dir], env());
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("imported 3, skipped 0");
    const second = await svc(["notes", "import", dir], env());
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("imported 0, skipped 3");
    for (const file of ["deploys.md", "plain.md", "old/nested.markdown"])
      expect(existsSync(join(dir, file))).toBe(true);
    const { rows } = await api.pool.query(
      "SELECT title, tags, pipeline, created_at FROM svc.notes ORDER BY title",
    );
    expect(rows.map((row) => row.title)).toEqual(["Deploys need the lock", "Flaky test", "nested"]);
    expect(rows[0]).toMatchObject({ tags: ["deploy", "ci"], pipeline: "release" });
    expect((rows[0].created_at as Date).toISOString()).toBe("2025-03-01T00:00:00.000Z");
  });

  it("import refuses a path that is not a directory", async () => {
    const run = await svc(["notes", "import", join(dir, "plain.md")], env());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("is not a directory");
  });

  it("list and show read the notes through the daemon API", async () => {
    const list = await svc(["notes", "list", "--tag", "deploy", "--json"], env());
    expect(list.code, list.stderr).toBe(0);
    const { notes } = JSON.parse(list.stdout) as { notes: { id: string; title: string }[] };
    expect(notes.map((note) => note.title)).toEqual(["Deploys need the lock"]);
    const show = await svc(["notes", "show", notes[0]!.id], env());
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain("Take the deploy lock first.");
    expect(show.stdout).toContain("tags: deploy, ci");
    const words = await svc(["notes", "list", "--query", "retry auth"], env());
    expect(words.stdout).toContain("Flaky test");
    expect(words.stdout).not.toContain("Deploys");
    const missing = await svc(["notes", "show", "not_zzzzzzzzzzzz"], env());
    expect(missing.code).toBe(1);
  });
});
