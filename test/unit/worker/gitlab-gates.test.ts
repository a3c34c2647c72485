import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { eventContext } from "../../../worker/event/context.ts";
import { gatePipelines } from "../../../worker/event/gates.ts";
import { codeUnchanged, matchPipelines } from "../../../worker/event/match.ts";
import { gitlabAuthorId } from "../../../worker/queue/gitlab-author.ts";
import { pipeline } from "../../support/pipeline.ts";

const FIXTURES = join(import.meta.dirname, "../../../ingress/webhooks/gitlab/fixtures");
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));

const on = (...events: string[]) => ({ webhook: [], tracker: [], codehost: [{ events, repos: [] }] });

describe("GitLab merge request updates that change no code", () => {
  const request = fixture("merge-request.json");
  const update = (oldrev?: string) => ({
    ...request,
    object_attributes: { ...(request.object_attributes as object), action: "update", oldrev },
  });
  const config = {
    pipelines: {
      review: pipeline("review", { trigger: on("merge_request") }),
      triage: pipeline("triage", { trigger: on("merge_request.update") }),
    },
  };
  const fired = (payload: unknown) =>
    matchPipelines(config, {
      kind: "codehost",
      source: "gitlab",
      eventName: "merge_request.update",
      repo: "gitlabhq/gitlab-test",
      codeUnchanged: codeUnchanged("merge_request.update", payload),
    }).map((p) => p.name);

  it("a title or label change fires only the pipelines naming merge_request.update", () => {
    expect(codeUnchanged("merge_request.update", update())).toBe(true);
    expect(fired(update())).toEqual(["triage"]);
  });

  it("a push to the merge request (oldrev set) fires every merge_request pipeline", () => {
    expect(codeUnchanged("merge_request.update", update("0123abc"))).toBe(false);
    expect(fired(update("0123abc"))).toEqual(["review", "triage"]);
    expect(codeUnchanged("merge_request.open", request)).toBe(false);
  });
});

describe("GitLab author gates", () => {
  const request = fixture("merge-request.json");
  const open = pipeline("open");
  const boxed = pipeline("boxed", { sandbox: { image: "agent:default", mounts: [] } as never });
  const members = pipeline("members", { authors: ["owner", "member"] });
  const allowed = (payload: unknown, author?: "owner" | "member" | "none") =>
    gatePipelines([open, boxed, members], {
      payload,
      ...(author ? { author } : {}),
      context: eventContext("codehost", payload, author),
    }).allowed.map((p) => p.name);

  it("a developer's merge request starts every pipeline", () => {
    expect(allowed(request, "member")).toEqual(["open", "boxed", "members"]);
  });

  it("a non-member's, or one whose author GitLab did not place, starts only sandboxed pipelines", () => {
    expect(allowed(request, "none")).toEqual(["boxed"]);
    expect(allowed(request)).toEqual(["boxed"]);
    // a payload claiming a high access level is not an established author
    expect(allowed({ ...request, user: { ...(request.user as object), access_level: 50 } })).toEqual([
      "boxed",
    ]);
  });

  it("a fork's merge request is none whoever wrote it", () => {
    const attributes = request.object_attributes as Record<string, unknown>;
    const fork = { ...request, object_attributes: { ...attributes, source_project_id: 999 } };
    expect(allowed(fork, "owner")).toEqual(["boxed"]);
  });

  it("judges a merge request's author, a note's writer and a push's pusher", () => {
    expect(gitlabAuthorId(request)).toBe((request.object_attributes as { author_id: number }).author_id);
    const note = fixture("note-merge-request.json");
    expect(gitlabAuthorId(note)).toBe((note.object_attributes as { author_id: number }).author_id);
    const push = fixture("push.json");
    expect(gitlabAuthorId(push)).toBe(push.user_id);
  });
});
