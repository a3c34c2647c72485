import { z } from "zod";
import { insertNote } from "../../../db/notes.ts";
import { submitsTrusted } from "../../auth/notes.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `submit_note`: keeps what the agent learned as a note of the current run (its pipeline, agent and
 * repo, and the invocation as source). A caller without a run token writes a note bound to no run.
 * A run whose event came from an outsider (a fork's pull request, a non-member author) writes an
 * untrusted note: no other run is given it until an operator trusts it.
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
    const trusted = submitsTrusted(principal);
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
