import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EventMatcher, PullRequestFilters } from "../../../shared/config/types.ts";
import { filterPipelines, globsMatch, judge, pullFacts } from "../../../worker/event/filters.ts";
import { matchPipelines } from "../../../worker/event/match.ts";
import { pipeline } from "../../support/pipeline.ts";

/** Pull request filters judged on GitHub's published `pull_request` payload (the ingress fixture). */
const OPENED = JSON.parse(
  readFileSync(
    join(import.meta.dirname, "../../../ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"),
    "utf8",
  ),
) as { pull_request: Record<string, unknown> } & Record<string, unknown>;
const REPO = "Codertocat/Hello-World";

/** The fixture as GitHub sends `action`, its pull request changed by `pull`; `label` is a `labeled` event's. */
function delivery(action: string, pull: Record<string, unknown> = {}, label?: string) {
  return {
    ...OPENED,
    action,
    pull_request: { ...OPENED.pull_request, ...pull },
    ...(label ? { label: { id: 1, name: label, color: "fff", default: false } } : {}),
  };
}
const labels = (...names: string[]) => ({ labels: names.map((name, id) => ({ id, name, color: "fff" })) });

const on = (...matchers: EventMatcher[]) => ({ webhook: [], tracker: [], codehost: matchers });
const entry = (events: string[], filters?: PullRequestFilters): EventMatcher => ({
  events,
  repos: [],
  ...(filters ? { filters } : {}),
});

function fire(
  matchers: EventMatcher[],
  action: string,
  payload: unknown,
  files?: { files: string[]; complete: boolean },
) {
  const config = { pipelines: { "pr-review": pipeline("pr-review", { trigger: on(...matchers) }) } };
  const eventName = `pull_request.${action}`;
  const trigger = { kind: "codehost", source: "github", eventName, repo: REPO };
  const matched = matchPipelines(config, trigger);
  return {
    matched: matched.map((p) => p.name),
    ...filterPipelines(matched, trigger, pullFacts(eventName, payload), files),
  };
}

describe("the facts of a pull request event", () => {
  it("reads the base branch, draft state, labels and the label a labeled event added", () => {
    expect(pullFacts("pull_request.labeled", delivery("labeled", { draft: true }, "ai-review"))).toEqual({
      action: "labeled",
      number: 2,
      base: "master",
      draft: true,
      labels: ["bug"],
      added: "ai-review",
    });
    expect(pullFacts("push", { ref: "refs/heads/main" })).toBeNull();
    expect(pullFacts("merge_request.open", { object_kind: "merge_request" })).toBeNull();
  });
});

describe("globs in GitHub Actions' way", () => {
  it("`*` stays within a name, `**` crosses them, dot files are matched, and the last matching glob decides", () => {
    expect(globsMatch("docs/a.md", ["docs/*"])).toBe(true);
    expect(globsMatch("docs/guide/a.md", ["docs/*"])).toBe(false);
    expect(globsMatch("docs/guide/a.md", ["docs/**"])).toBe(true);
    expect(globsMatch(".github/workflows/ci.yml", ["**"])).toBe(true);
    expect(globsMatch("src/.env", ["src/**"])).toBe(true);
    expect(globsMatch(".github/ci.yml", [".github/**"])).toBe(true);
    expect(globsMatch("src/vendor/x.js", ["src/**", "!src/vendor/**"])).toBe(false);
    expect(globsMatch("src/vendor/keep.js", ["src/**", "!src/vendor/**", "src/vendor/keep.js"])).toBe(true);
    expect(globsMatch("release/v1", ["release/*"])).toBe(true);
  });
});

describe("drafts: false by default", () => {
  it("a draft's opened and synchronize fire nothing and say why; its ready_for_review fires a pipeline on opened", () => {
    const matchers = [entry(["pull_request.opened", "pull_request.synchronize"])];
    const draft = fire(matchers, "opened", delivery("opened", { draft: true }));
    expect(draft.fired).toEqual([]);
    expect(draft.filtered).toEqual([
      {
        pipeline: "pr-review",
        why: "#2 is a draft (drafts: false): it fires once the pull request is ready_for_review",
      },
    ]);
    expect(fire(matchers, "synchronize", delivery("synchronize", { draft: true })).fired).toEqual([]);
    const ready = fire(matchers, "ready_for_review", delivery("ready_for_review", { draft: false }));
    expect([ready.matched, ready.fired.map((p) => p.name)]).toEqual([["pr-review"], ["pr-review"]]);
  });

  it("drafts: true fires on a draft and adds no ready_for_review; a closed draft still fires a pipeline on closed", () => {
    const withDrafts = [entry(["pull_request.opened"], { drafts: true })];
    expect(fire(withDrafts, "opened", delivery("opened", { draft: true })).fired).toHaveLength(1);
    expect(fire(withDrafts, "ready_for_review", delivery("ready_for_review")).matched).toEqual([]);
    expect(
      fire([entry(["pull_request.closed"])], "closed", delivery("closed", { draft: true })).fired,
    ).toHaveLength(1);
    // a pipeline on closed only did not ask for reviews: ready_for_review is none of its business
    expect(
      fire([entry(["pull_request.closed"])], "ready_for_review", delivery("ready_for_review")).matched,
    ).toEqual([]);
  });
});

describe("branches", () => {
  it("judge the pull request's base", () => {
    const main = [entry(["pull_request"], { branches: ["main", "release/**"] })];
    expect(fire(main, "opened", delivery("opened")).filtered[0]?.why).toBe(
      "base branch master matches none of branches [main, release/**]",
    );
    const release = delivery("opened", {
      base: { ...(OPENED.pull_request.base as object), ref: "release/1.2" },
    });
    expect(fire(main, "opened", release).fired).toHaveLength(1);
    const ignored = [entry(["pull_request"], { branchesIgnore: ["mast*"] })];
    expect(fire(ignored, "opened", delivery("opened")).filtered[0]?.why).toBe(
      "base branch master matches branches_ignore [mast*]",
    );
  });
});

describe("labels", () => {
  const review = [entry(["pull_request.synchronize"], { labels: ["ai-review"] })];

  it("fire on labeled with a listed label, though the entry does not list labeled, and not with another", () => {
    const added = fire(review, "labeled", delivery("labeled", labels("bug", "ai-review"), "ai-review"));
    expect([added.matched, added.fired.map((p) => p.name)]).toEqual([["pr-review"], ["pr-review"]]);
    const other = fire(review, "labeled", delivery("labeled", labels("ai-review", "bug"), "bug"));
    expect(other.filtered[0]?.why).toBe("the label added (bug) is not one of labels [ai-review]");
  });

  it("fire on a later push while the label is on, and not once it is off", () => {
    expect(fire(review, "synchronize", delivery("synchronize", labels("AI-Review"))).fired).toHaveLength(1);
    expect(fire(review, "synchronize", delivery("synchronize", labels("bug"))).filtered[0]?.why).toBe(
      "#2 carries none of labels [ai-review]",
    );
  });

  it("without a labels filter, labeled is not implied", () => {
    expect(
      fire([entry(["pull_request.synchronize"])], "labeled", delivery("labeled", {}, "x")).matched,
    ).toEqual([]);
  });
});

describe("paths", () => {
  const src = [entry(["pull_request.opened"], { paths: ["src/**"] })];

  it("wait on the changed files, then fire when one matches", () => {
    expect(fire(src, "opened", delivery("opened")).needFiles.map((p) => p.name)).toEqual(["pr-review"]);
    expect(
      fire(src, "opened", delivery("opened"), { files: ["docs/a.md", "src/x.ts"], complete: true }).fired,
    ).toHaveLength(1);
    const docs = fire(src, "opened", delivery("opened"), { files: ["docs/a.md"], complete: true });
    expect(docs.filtered).toEqual([{ pipeline: "pr-review", why: "no changed file matches paths [src/**]" }]);
  });

  it("paths_ignore holds a pull request every file of which it matches", () => {
    const ignore = [entry(["pull_request.opened"], { pathsIgnore: ["docs/**", "**/*.md"] })];
    expect(
      fire(ignore, "opened", delivery("opened"), { files: ["docs/a.md", "README.md"], complete: true })
        .filtered,
    ).toEqual([{ pipeline: "pr-review", why: "every changed file matches paths_ignore [docs/**, **/*.md]" }]);
    expect(
      fire(ignore, "opened", delivery("opened"), { files: ["docs/a.md", "src/x.ts"], complete: true }).fired,
    ).toHaveLength(1);
  });

  it("a list GitHub cut at 3,000 files fires (an unseen file may match); unread files hold it and say why", () => {
    expect(
      fire(src, "opened", delivery("opened"), { files: ["docs/a.md"], complete: false }).fired,
    ).toHaveLength(1);
    const verdict = judge({ paths: ["src/**"] }, pullFacts("pull_request.opened", delivery("opened"))!, {
      unknown: "GitHub answered 502: Server Error",
    });
    expect(verdict).toEqual({
      fires: false,
      why: "its changed files could not be read (GitHub answered 502: Server Error), so paths [src/**] cannot be judged",
    });
  });

  it("are not read when the payload already holds the event (a draft)", () => {
    const draft = fire(src, "opened", delivery("opened", { draft: true }));
    expect([draft.needFiles, draft.filtered.length]).toEqual([[], 1]);
  });
});

describe("several entries", () => {
  it("a pipeline fires when one of its entries lets the event through", () => {
    const matchers = [
      entry(["pull_request.opened"], { branches: ["main"] }),
      entry(["pull_request.opened"], { labels: ["bug"] }),
    ];
    expect(fire(matchers, "opened", delivery("opened")).fired).toHaveLength(1);
  });

  it("another kind of trigger (a manual fire) is not filtered", () => {
    const config = {
      pipelines: { x: pipeline("x", { trigger: on(entry(["pull_request"], { branches: ["main"] })) }) },
    };
    const manual = filterPipelines([config.pipelines.x], { kind: "manual", eventName: "x", repo: "" }, null);
    expect(manual.fired).toHaveLength(1);
  });
});
