import { previousGroupHead } from "../../db/concurrency-groups.ts";
import type { Queryable } from "../../db/queryable.ts";
import type { RunInput } from "./types.ts";
import { isAncestorOfHead } from "./workspace.ts";

/**
 * PREVIOUS_SHA of a run of a concurrency group: the head the group's last completed run reviewed,
 * when it is an ancestor of this run's head in its checkout. After a force push (the old head is
 * gone, or on another line) it is empty, so the agent reviews everything: a rewritten history never
 * narrows a review to a diff against a commit the new head does not contain.
 */
export async function previousHead(
  db: Queryable,
  group: string,
  input: Pick<RunInput, "invocationId" | "paths">,
): Promise<string> {
  const sha = await previousGroupHead(db, group, input.invocationId);
  if (!sha) return "";
  return (await isAncestorOfHead(input.paths.checkout, sha)) ? sha : "";
}
