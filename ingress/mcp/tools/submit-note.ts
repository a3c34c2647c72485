import { z } from "zod";
import { insertNote } from "../../../db/notes.ts";
import { eventOriginOfInvocation } from "../../../db/notes-trust.ts";
import { sourceTrustsSender } from "../../../shared/config/daemon/webhooks.ts";
import type { ApiDependencies } from "../../api/types.ts";
import { submitsTrusted } from "../../auth/notes.ts";
import type { Principal } from "../../auth/principal.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * Whether the note a caller submits is trusted: its trust follows its event's author. An
 * operator's is; a run's only when its worker recorded the event as the team's (`outsider: false`)
 * and its source vouches for the sender: a bearer or tracker payload names no author svc could
 * judge, so its run's note is trusted only when the source declares `trusted_senders: true`.
 * Without that, anyone holding a bearer source's secret (or a tracker's guest) would write
 * trusted, team-wide notes through a run without a repository.
 */
async function noteTrusted(principal: Principal, deps: ApiDependencies): Promise<boolean> {
  const { run } = principal;
  if (!run) return true;
  if (!submitsTrusted(principal)) return false;
  const origin = await eventOriginOfInvocation(deps.pool, run.invocation);
  // a token whose invocation is gone vouches for nothing
  if (origin === undefined) return false;
  return origin === null || sourceTrustsSender(deps.config.webhooks.sources, origin);
}

/**
 * `submit_note`: keeps what the agent learned as a note of the current run (its pipeline, agent and
 * repo, and the invocation as source). A caller without a run token writes a note bound to no run.
 * A run whose event came from an outsider (a fork's pull request, a non-member author, a sender its
 * source does not vouch for) writes an untrusted note: no other run is given it until an operator
 * trusts it.
 */
export const submitNote: ToolDefinition = {
  name: "submit_note",
  description:
    "Keep a note for later runs: something learned about the repository, the task or the team. Notes outlive run workspaces.",
  access: "write",
  input: z
    .object({
      title: z.string().min(1).max(200).optional().describe("a short title"),
      body: z.string().min(1).max(100_000).describe("the note, in Markdown"),
      tags: z.array(z.string().min(1).max(64)).max(20).optional().describe("labels to find it by"),
    })
    .strict(),
  async run(input, { principal, deps }) {
    const { title, body, tags } = input as { title?: string; body: string; tags?: string[] };
    const run = principal.run;
    const trusted = await noteTrusted(principal, deps);
    const note = await insertNote(deps.pool, {
      invocationId: run?.invocation ?? null,
      pipeline: run?.pipeline ?? null,
      agent: run?.agent ?? null,
      repo: run?.repo || null,
      title: title ?? null,
      body,
      tags: tags ?? [],
      trusted,
    });
    deps.logger.info("note submitted", {
      event: "mcp.note_submitted",
      note: note?.id,
      invocation: run?.invocation,
      trusted,
      by: principal.owner,
    });
    return textResult({
      id: note?.id,
      pipeline: note?.pipeline,
      agent: note?.agent,
      repo: note?.repo,
      trusted: note?.trusted,
    });
  },
};
