import type { Command } from "@oclif/core";
import { connectDaemon, type DaemonClient, DaemonError, DaemonUnreachableError } from "./client.ts";

/**
 * Calls the daemon as the CLI's user (`svc auth setup`'s credential for SVC_DAEMON_URL). A refusal
 * or an unreachable daemon ends the command with the daemon's message and exit 1; `refused` may
 * answer a refusal its own way first, and ends the command itself when it does.
 */
export async function fromDaemon<T>(
  command: Command,
  call: (client: DaemonClient) => Promise<T>,
  refused?: (error: DaemonError) => void,
): Promise<T> {
  try {
    return await call(await connectDaemon());
  } catch (error) {
    if (error instanceof DaemonError) refused?.(error);
    if (error instanceof DaemonError || error instanceof DaemonUnreachableError)
      command.error(error.message, { exit: 1 });
    throw error;
  }
}
