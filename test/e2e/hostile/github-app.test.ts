import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type AppBed, REPO, SIBLING, startAppBed } from "../outputs/github-app-bed.ts";
import { PR_PAYLOAD } from "../outputs/pull-request.ts";

/**
 * A pull request's setup script is an attacker holding the GH_TOKEN svc gives setup steps of a
 * GitHub App identity. It tries to post a comment with it, to read another repository of the same
 * installation, and to get it stored in the run's log. The token must be an installation token
 * restricted to the event's repository and read-only; its log must not carry it; the agent gets
 * none; the run still ends and publishes as it should.
 */
describe("hostile: a setup script holding the App's GH_TOKEN", () => {
  let bed: AppBed;

  beforeAll(async () => {
    bed = await startAppBed(inject("adminDatabaseUrl"));
  });

  afterAll(async () => {
    await bed?.stop();
  });

  it("gets a read-only token for the event's repository alone, which it cannot post with, read beside, or leak into its log", async () => {
    const id = await bed.deliver("reopened");
    expect((await waitForTrigger(bed.pool, id)).status).toBe("completed");

    const held = await readFile(join(bed.out, "token"), "utf8");
    // nothing fired: its post was refused and its read of the sibling repository hidden
    expect(await readFile(join(bed.out, "post-status"), "utf8")).toBe("403");
    expect(await readFile(join(bed.out, "sibling-status"), "utf8")).toBe("404");
    const thread = bed.github.comments.get(`${REPO}#${PR_PAYLOAD.number}`) ?? [];
    expect(thread.map((comment) => comment.body).join("\n")).not.toContain("pwned");
    expect(
      bed.github.requests.some((request) => request.path === `/repos/${SIBLING}` && request.method === "GET"),
    ).toBe(true);
    // it was asked for so: this repository, read-only
    const exchange = bed.github.exchanges.find((entry) => entry.token === held);
    expect(exchange).toMatchObject({
      installationId: 77,
      repositories: [REPO.split("/")[1]],
      permissions: { contents: "read", pull_requests: "read", issues: "read", metadata: "read" },
    });
    // the run published as the App, with its own (unrestricted) token, not the step's
    const posts = bed.github.requests.filter(
      (request) =>
        request.method === "POST" && request.path === `/repos/${REPO}/issues/${PR_PAYLOAD.number}/comments`,
    );
    expect(posts.filter((post) => post.authorization === `token ${held}`)).toHaveLength(1); // the attempt
    expect(thread.map((comment) => comment.user.login)).toEqual(["svc-app[bot]", "svc-app[bot]"]);
    // the agent is given no code-host token by the App identity
    expect(await readFile(join(bed.out, "agent-gh-token"), "utf8")).toBe("none");

    // nothing leaked: the step's log has its line, without the token; no artifact holds a key
    const { artifacts } = await lineage(bed.pool, id);
    const log = artifacts.find((artifact) => artifact.name === "setup-0.log");
    // a bare token in no credential-shaped text: only the run's own values can redact it
    expect(log?.rendered).toMatch(/^holding \S+ now$/m);
    const stored = JSON.stringify(artifacts);
    expect(stored).not.toContain(held);
    for (const key of bed.keys) expect(stored).not.toContain(key.split("\n")[1]);
  });
});
