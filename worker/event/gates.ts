import type { Pipeline } from "../../shared/config/types.ts";
import { association } from "./command.ts";
import { isGitlabPayload, isOutsider } from "./context.ts";
import type { ResolvedEvent } from "./resolve.ts";

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
}

export interface GateResult {
  allowed: Pipeline[];
  /** pipelines the event's author may not start, with the gate that stopped them */
  gated: Pipeline[];
}

/**
 * Who may start which pipeline: a pipeline with `authors` runs for those associations only (read
 * from the pull request, else the comment, issue or review, and a fork's pull request never counts
 * as its author's association: it is `none`); a pipeline without it runs for an outsider
 * (isOutsider: a fork, or an author who is not owner, member or collaborator) only when it is
 * sandboxed, since an unsandboxed run has the worker's credentials and network.
 *
 * A GitLab payload states no association: its author is what dispatch established through the
 * members API (`established`), `none` when it could not, and a fork's merge request is `none`.
 */
export function gatePipelines(
  pipelines: Pipeline[],
  event: Pick<ResolvedEvent, "payload" | "author" | "context">,
): GateResult {
  const { payload } = event;
  // the event model already judged who is outside, GitLab's established author included
  const { outsider } = event.context;
  const gitlab = isGitlabPayload(payload);
  const fork = isOutsider(payload) && (gitlab || fromFork(payload));
  const author = fork ? "none" : gitlab ? (event.author ?? "none") : authorOf(payload);
  const allowed: Pipeline[] = [];
  const gated: Pipeline[] = [];
  for (const pipeline of pipelines) {
    const ok = pipeline.authors
      ? pipeline.authors.includes(author)
      : !outsider || pipeline.sandbox !== undefined;
    (ok ? allowed : gated).push(pipeline);
  }
  return { allowed, gated };
}

function authorOf(payload: unknown) {
  const body = obj(payload) ?? {};
  for (const key of ["pull_request", "comment", "issue", "review"]) {
    const part = obj(body[key]);
    if (part && "author_association" in part) return association(part.author_association);
  }
  // an event carrying no author (a push, a bearer webhook, a manual fire) is the operator's
  return "owner";
}

function fromFork(payload: unknown): boolean {
  const pull = obj(obj(payload)?.pull_request);
  const head = obj(pull?.head);
  if (!head || !("repo" in head)) return false;
  const baseName = obj(obj(pull?.base)?.repo)?.full_name ?? obj(obj(payload)?.repository)?.full_name;
  const headName = obj(head.repo)?.full_name;
  return (
    typeof headName !== "string" ||
    typeof baseName !== "string" ||
    headName.toLowerCase() !== baseName.toLowerCase()
  );
}
