import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, gitHost } from "../../support/git-smart-http.ts";
import { agentRunning } from "../outputs/sticky-bed.ts";
import {
  GITLAB_TOKEN,
  type GitlabBed,
  mergeRequestPayload,
  PROJECT,
  project,
  startGitlabBed,
} from "./gitlab-bed.ts";

/**
 * A merge request's head exists in GitLab only at `refs/merge-requests/<iid>/head` (a fork's
 * branch is in the fork): the checkout fetches it from there, from a private project, with the
 * code host's token sent as GitLab takes it (Basic `oauth2:<token>`). And a fork's merge request,
 * whoever opened it, starts only sandboxed pipelines.
 */
const CHECKOUT = `trigger:
  codehost: [merge_request.open]
targets: [agent]
setup:
  - run: 'git -C "$WORKTREE" rev-parse HEAD > "$RUN_DIR/head.txt"; git -C "$WORKTREE" show HEAD:README.md > "$RUN_DIR/readme.txt"'
instructions: Look at the merge request.
`;

const OPEN = `trigger:
  codehost: [merge_request.close]
targets: [agent]
instructions: Runs with the worker's credentials.
`;

const BOXED = `trigger:
  codehost: [merge_request.close]
targets: [agent]
sandbox: {}
instructions: Runs in a sandbox.
`;

describe("GitLab checkouts and forks", () => {
  let bed: GitlabBed;
  let git: GitHost;
  let work: string;
  let head: string;

  beforeAll(async () => {
    // only svc's token may read the private project, and only as GitLab's oauth2 user
    git = gitHost({ user: "oauth2", authorize: (token, repo) => token === GITLAB_TOKEN && repo === PROJECT });
    git.createRepo(PROJECT, { private: true });
    work = await mkdtemp(join(tmpdir(), "svc-e2e-gitlab-work-"));
    const run = testGit(work);
    run(["init", "--quiet", "--initial-branch=main", work]);
    run(["commit", "--quiet", "--allow-empty", "-m", "base"], work);
    run(["push", "--quiet", git.pathOf(PROJECT), "HEAD:refs/heads/main"], work);
    const base = run(["rev-parse", "HEAD"], work);
    run(["checkout", "--quiet", "-b", "fork-feature"], work);
    await writeFile(join(work, "README.md"), "from the fork\n");
    run(["add", "README.md"], work);
    run(["commit", "--quiet", "-m", "the fork's change"], work);
    head = run(["rev-parse", "HEAD"], work);
    // GitLab keeps a merge request's head here, whether its branch is in the project or a fork
    run(["push", "--quiet", git.pathOf(PROJECT), `${head}:refs/merge-requests/5/head`], work);
    const gitlabProject = project();
    gitlabProject.mergeRequests[0]!.diff_refs = { base_sha: base, start_sha: base, head_sha: head };
    bed = await startGitlabBed({
      agents: ["agent"],
      pipelines: { checkout: CHECKOUT, "fork-open": OPEN, "fork-boxed": BOXED },
      projects: [gitlabProject],
      git,
      daemon: `repos:\n  ${PROJECT}: {}\nsandboxes:\n  engine: { socket: /nonexistent/docker.sock }\n`,
    });
  });

  afterAll(async () => {
    await bed?.close();
    git?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("checks out the merge request's head from refs/merge-requests/<iid>/head of the private project, with the token", async () => {
    const payload = mergeRequestPayload({ sha: head });
    // GitLab's diff_refs name the base; the head is nowhere but the merge request's ref
    const attributes = payload.object_attributes as Record<string, unknown>;
    attributes.source_branch = "fork-feature";
    const id = await bed.deliver(payload, "Merge Request Hook");
    await agentRunning(bed.pool, id);
    await bed.release("agent", {});
    expect(await waitForTrigger(bed.pool, id)).toMatchObject({ status: "completed", diagnostic: null });
    const { workloads, invocations, tasks } = await lineage(bed.pool, id);
    expect(tasks.map((t) => t.kind)).toContain("checkout");
    const runDir = join(bed.dir, "workspaces", workloads[0].id, invocations[0].id, "run");
    expect((await readFile(join(runDir, "head.txt"), "utf8")).trim()).toBe(head);
    expect(await readFile(join(runDir, "readme.txt"), "utf8")).toBe("from the fork\n");
    const served = git.requests.filter((r) => r.repo === PROJECT && r.status === 200);
    expect(git.uploadPacks(PROJECT).length).toBeGreaterThan(0);
    expect(served.length).toBeGreaterThan(0);
    expect(served.every((r) => r.token === GITLAB_TOKEN)).toBe(true);
    // the token never reached an artifact, a task's or the run's diagnostic
    const { rows } = await bed.pool.query(
      "SELECT coalesce(rendered, '') || coalesce(path, '') AS text FROM svc.artifacts UNION ALL SELECT coalesce(diagnostic::text, '') FROM svc.tasks UNION ALL SELECT coalesce(diagnostic::text, '') FROM svc.invocations",
    );
    for (const row of rows) expect(row.text).not.toContain(GITLAB_TOKEN);
  });

  it("a fork's merge request, even a developer's of the project, starts only the sandboxed pipeline", async () => {
    const id = await bed.deliver(
      mergeRequestPayload({ sha: head, action: "close", fork: true }),
      "Merge Request Hook",
    );
    const trigger = await waitForTrigger(bed.pool, id);
    const { workloads } = await lineage(bed.pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["fork-boxed"]);
    expect(trigger.status).not.toBe("queued");
  });
});
