import type { PgBoss } from "pg-boss";
import { CANCEL_CHANNEL } from "../db/invocations.ts";
import { TASK_CANCEL_CHANNEL } from "../db/orchestrated-tasks.ts";
import type { RunHandle } from "./run/lifecycle.ts";
import type { TaskHandle } from "./tasks/claim.ts";

interface Listener {
  close(): Promise<void>;
}

/**
 * Delivers the API's cancellations (announced by NOTIFY) to the runs and tasks this worker holds,
 * at once: a cancelled invocation stops its run and every task of it held here; a cancelled task
 * stops alone. A lost notification is caught by the next heartbeat's status read.
 */
export async function listenForCancellations(
  boss: PgBoss,
  runs: Map<string, RunHandle>,
  tasks: Map<string, TaskHandle>,
  opened: { cancelListener?: Listener; taskCancelListener?: Listener },
): Promise<void> {
  const db = boss.getDb();
  opened.cancelListener = await db.listen?.(
    CANCEL_CHANNEL,
    (invocation) => {
      runs.get(invocation)?.cancel();
      for (const task of tasks.values()) if (task.invocationId === invocation) task.cancel();
    },
    () => {},
  );
  opened.taskCancelListener = await db.listen?.(
    TASK_CANCEL_CHANNEL,
    (task) => tasks.get(task)?.cancel(),
    () => {},
  );
}
