import type { Pipeline } from "../../shared/config/types.ts";
import { eventAuthor } from "./context.ts";
import type { ResolvedEvent } from "./resolve.ts";

export interface GateResult {
  allowed: Pipeline[];
  /** pipelines the event's author may not start, with the gate that stopped them */
  gated: Pipeline[];
}

/**
 * Who may start which pipeline: a pipeline with `authors` runs for those associations only; a
 * pipeline without it runs for an outsider only when it is sandboxed, since an unsandboxed run has
 * the worker's credentials and network. Who the author is and whether they are outside is the
 * event model's judgement (worker/event/authors.ts: the payload's stated association, else the
 * sender's permission dispatch established, failing closed; a fork's code is `none`), so the gate
 * itself reads nothing but the event.
 *
 * A sandbox on the host's network (`network: host`, the pipeline's or `sandboxes.network`) is no
 * sandbox here: it shares the worker's network namespace, its loopback services and whatever the
 * host's address may reach.
 */
export function gatePipelines(
  pipelines: Pipeline[],
  event: Pick<ResolvedEvent, "payload" | "author" | "context"> &
    Partial<Pick<ResolvedEvent, "kind" | "head">>,
  sandboxes?: { network?: string },
): GateResult {
  const { outsider } = event.context;
  const author = eventAuthor(event.payload, {
    author: event.author,
    head: event.head,
    // a replay is judged as its original's channel delivered it (ResolvedEvent.kind is the original's)
    ...(event.kind ? { channel: event.kind } : {}),
  });
  const allowed: Pipeline[] = [];
  const gated: Pipeline[] = [];
  for (const pipeline of pipelines) {
    const ok = pipeline.authors
      ? pipeline.authors.includes(author)
      : !outsider || isolated(pipeline, sandboxes);
    (ok ? allowed : gated).push(pipeline);
  }
  return { allowed, gated };
}

function isolated(pipeline: Pipeline, sandboxes: { network?: string } | undefined): boolean {
  if (pipeline.sandbox === undefined) return false;
  return (pipeline.sandbox.network ?? sandboxes?.network ?? "none") !== "host";
}
