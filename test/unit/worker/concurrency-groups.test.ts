import { describe, expect, it } from "vitest";
import { readConcurrency } from "../../../shared/config/pipeline/concurrency.ts";
import { ConfigFile } from "../../../shared/config/source.ts";
import type { ConfigProblem } from "../../../shared/config/types.ts";
import { eventContext, eventNumber } from "../../../worker/event/context.ts";
import { concurrencyGroup } from "../../../worker/event/group.ts";
import { assemblePrompt } from "../../../worker/run/prompt.ts";
import { pipeline } from "../../support/pipeline.ts";

function read(root: Record<string, unknown>) {
  const problems: ConfigProblem[] = [];
  const concurrency = readConcurrency(new ConfigFile("pipelines/review.yaml", problems), root);
  return { concurrency, messages: problems.map((problem) => `${problem.severity}: ${problem.message}`) };
}

describe("concurrency: in a pipeline file", () => {
  it("reads the group and cancel_in_progress, which defaults to false", () => {
    expect(read({ concurrency: { group: "pull_request", cancel_in_progress: true } })).toEqual({
      concurrency: { group: "pull_request", cancelInProgress: true },
      messages: [],
    });
    expect(read({ concurrency: { group: "repository" } })).toEqual({
      concurrency: { group: "repository", cancelInProgress: false },
      messages: [],
    });
    expect(read({})).toEqual({ concurrency: undefined, messages: [] });
  });

  it("refuses a bad block with a message naming the key and the fix", () => {
    expect(read({ concurrency: "pull_request" }).messages).toEqual([
      'error: pipelines/review.yaml: "concurrency" must be a mapping, not a string such as { group: pull_request, cancel_in_progress: true }',
    ]);
    expect(read({ concurrency: { cancel_in_progress: true } })).toEqual({
      concurrency: undefined,
      messages: [
        'error: pipelines/review.yaml: "concurrency.group" is required - write pull_request, repository or pipeline: the runs of one group never run at once',
      ],
    });
    expect(read({ concurrency: { group: "branch" } }).messages).toEqual([
      'error: pipelines/review.yaml: "concurrency.group" must be one of pull_request, repository, pipeline (got "branch")',
    ]);
    expect(read({ concurrency: { group: "pipeline", cancel_in_progress: "yes" } }).messages).toEqual([
      'error: pipelines/review.yaml: "concurrency.cancel_in_progress" must be a boolean (true or false)',
    ]);
    expect(read({ concurrency: { group: "pipeline", cancel: true } }).messages).toEqual([
      'warning: pipelines/review.yaml: unknown key "concurrency.cancel" is ignored - check its spelling; known keys here: group, cancel_in_progress',
    ]);
  });
});

describe("the number of the pull request or issue an event concerns", () => {
  it("reads GitHub's, GitLab's and a bearer webhook's numbers", () => {
    expect(eventNumber({ number: 7, pull_request: { number: 7 } })).toBe(7);
    expect(eventNumber({ issue: { number: 12 }, comment: { body: "hi" } })).toBe(12);
    expect(eventNumber({ object_kind: "merge_request", object_attributes: { iid: 3, id: 999 } })).toBe(3);
    expect(eventNumber({ merge_request: { iid: 4 } })).toBe(4);
    expect(eventNumber({ args: { number: 5 } })).toBe(5);
    expect(
      eventContext("codehost", { repository: { full_name: "a/b" }, pull_request: { number: 9 } }),
    ).toMatchObject({ repo: "a/b", number: 9 });
  });

  it("names none for a push, or for anything but a positive integer", () => {
    expect(eventNumber({ ref: "refs/heads/main", after: "abc" })).toBeUndefined();
    expect(eventNumber({ number: "7" })).toBeUndefined();
    expect(eventNumber({ number: -1 })).toBeUndefined();
    expect(eventNumber({ number: 1.5 })).toBeUndefined();
    expect(eventNumber(null)).toBeUndefined();
    expect(eventContext("codehost", { repository: { full_name: "a/b" } })).not.toHaveProperty("number");
  });
});

describe("the group an event's run joins", () => {
  const grouped = (group: "pull_request" | "repository" | "pipeline") =>
    pipeline("review", { concurrency: { group, cancelInProgress: true } });

  it("groups by pipeline, repository and number; by repository; by pipeline", () => {
    const context = { repo: "acme/widgets", number: 7 };
    expect(concurrencyGroup(grouped("pull_request"), context)).toBe("pull_request:review:acme/widgets#7");
    expect(concurrencyGroup(grouped("repository"), context)).toBe("repository:review:acme/widgets");
    expect(concurrencyGroup(grouped("pipeline"), context)).toBe("pipeline:review");
    expect(concurrencyGroup(pipeline("review"), context)).toBeNull();
  });

  it("falls back to the repository without a number, to the pipeline without a repository", () => {
    expect(concurrencyGroup(grouped("pull_request"), { repo: "acme/widgets" })).toBe(
      "repository:review:acme/widgets",
    );
    expect(concurrencyGroup(grouped("pull_request"), { repo: "" })).toBe("pipeline:review");
    expect(concurrencyGroup(grouped("repository"), { repo: "" })).toBe("pipeline:review");
  });

  it("leaves an eval's replay out of every group: it neither cancels nor waits for a live review", () => {
    expect(concurrencyGroup(grouped("pull_request"), { repo: "acme/widgets", number: 7 }, true)).toBeNull();
  });

  it("never gives a pull request's group the key of another kind's", () => {
    // a repository named like a pull request's key part still lands in another group
    expect(concurrencyGroup(grouped("repository"), { repo: "acme/widgets#7" })).not.toBe(
      concurrencyGroup(grouped("pull_request"), { repo: "acme/widgets", number: 7 }),
    );
  });
});

describe("the prompt of a run of a concurrency group", () => {
  const config = { agents: {}, skills: {}, policies: {} };
  const event = { name: "pull_request.synchronize", source: "codehost", payload: {} };
  const review = pipeline("review", { concurrency: { group: "pull_request", cancelInProgress: true } });

  it("says what changed since the previous head, or to review everything", () => {
    const since = assemblePrompt({ config, pipeline: review, event, previousSha: "a".repeat(40) }).user;
    expect(since).toContain(`reviewed ${"a".repeat(40)}, an ancestor of this head ($PREVIOUS_SHA)`);
    expect(since).toContain(`git diff ${"a".repeat(40)} HEAD`);
    const everything = assemblePrompt({ config, pipeline: review, event, previousSha: "" }).user;
    expect(everything).toContain("($PREVIOUS_SHA is empty): review everything");
  });

  it("says nothing of it for a pipeline without a group", () => {
    expect(assemblePrompt({ config, pipeline: pipeline("plain"), event }).user).not.toContain(
      "Since the last review",
    );
  });
});
