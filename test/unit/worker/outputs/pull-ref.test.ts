import { describe, expect, it } from "vitest";
import { pullRefOf } from "../../../../worker/outputs/codehost.ts";
import { pullRef } from "../../../../worker/outputs/publish.ts";

describe("the pull or merge request a result addresses", () => {
  it("splits at the last slash: a GitLab project in a subgroup keeps its whole namespace", () => {
    expect(pullRefOf("acme/widgets", 7)).toEqual({ owner: "acme", repo: "widgets", number: 7 });
    expect(pullRefOf("group/sub/project", 3)).toEqual({ owner: "group/sub", repo: "project", number: 3 });
    expect(pullRefOf("loose", 1).owner).toBe("");
  });

  it("a GitLab merge request's iid comes from the event model, its payload having no pull_request", () => {
    const event = {
      kind: "codehost",
      source: "gitlab",
      eventName: "merge_request.open",
      payload: { object_kind: "merge_request", object_attributes: { iid: 9 } },
      context: {
        repo: "group/sub/project",
        sha: "",
        branch: "",
        outsider: false,
        number: 9,
        pull: true,
        gitlab: true as const,
      },
    };
    expect(pullRef(event)).toEqual({ owner: "group/sub", repo: "project", number: 9 });
    // a push is about no merge request
    expect(() => pullRef({ ...event, context: { ...event.context, pull: undefined } })).toThrow(
      /not about an issue or pull request/,
    );
  });
});
