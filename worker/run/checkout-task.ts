import { finishTask, startTask } from "../../db/tasks.ts";
import { newId } from "../../shared/ids.ts";
import type { CheckoutResult } from "../checkout/checkout.ts";
import type { ResolvedEvent } from "../event/resolve.ts";
import type { RunDeps, RunInput } from "./types.ts";
import { checkOutEvent, type EventCheckout } from "./workspace.ts";

/**
 * The run's checkout, and, when it has a repository, its task in the trace (`checkout`, the run's
 * first): what was checked out, from the host's mirror or by a cold fetch, and the bytes fetched.
 * A run without a repository gets its empty folders and no task: no statement on its path.
 */
export async function checkOutRun(
  deps: RunDeps,
  input: RunInput,
  event: ResolvedEvent,
  previous: string | undefined,
): Promise<EventCheckout> {
  const { repo } = event.context;
  if (!repo || !deps.config.repos[repo]) {
    return checkOutEvent(deps, input.paths, event.context, input.pipeline);
  }
  const taskId = newId("task");
  const row = {
    id: taskId,
    invocationId: input.invocationId,
    kind: "checkout",
    name: `checkout ${repo}`,
    seq: 0,
  } as const;
  await startTask(deps.records, row);
  let checkout: EventCheckout;
  try {
    checkout = await checkOutEvent(deps, input.paths, event.context, input.pipeline, {
      ...(previous ? { previous } : {}),
    });
  } catch (error) {
    // not a checkout's failure (a database or file system error): the task does not stay running
    const end = {
      status: "failed",
      diagnostic: { code: "setup_failed", message: (error as Error).message },
    } as const;
    await finishTask(deps.records, taskId, end).catch(() => {}); // the run's own error is what is reported
    throw error;
  }
  const text = checkout.failure ? `${checkout.failure.message}\n` : describe(repo, checkout.result!);
  const artifact = {
    id: newId("artifact"),
    invocationId: input.invocationId,
    taskId,
    name: "checkout.log",
    mediaType: "text/plain",
    size: Buffer.byteLength(text),
    path: null,
    rendered: text,
  };
  const end = checkout.failure
    ? ({ status: "failed", diagnostic: checkout.failure } as const)
    : ({ status: "completed", exitCode: 0 } as const);
  await finishTask(deps.records, taskId, end, { artifact });
  return checkout;
}

function describe(repo: string, result: CheckoutResult): string {
  const lines = [
    `${repo} at ${result.head}`,
    result.cold
      ? `cold: the host's mirror of the repository was made for this run; its fetch added ${result.bytes} bytes to it`
      : result.bytes > 0
        ? `warm: from the host's mirror; its fetch added ${result.bytes} bytes to it`
        : "warm: from the host's mirror; nothing fetched (it held every commit)",
    ...(result.base ? [`base ${result.base.ref} at ${result.base.sha}`] : []),
    ...(result.mergeBase ? [`merge base ${result.mergeBase}`] : []),
    ...(result.previous ? [`previous reviewed head ${result.previous}`] : []),
    `${result.seconds.toFixed(3)} s`,
  ];
  return `${lines.join("\n")}\n`;
}
