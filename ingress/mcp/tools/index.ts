import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import type { ToolDefinition } from "../tool.ts";
import { getTrace } from "./get-trace.ts";
import { hostToolDefinition } from "./host-tool.ts";
import { keepResultSoFar } from "./keep-result.ts";
import { readKnowledge, searchKnowledge } from "./knowledge.ts";
import { readNote } from "./read-note.ts";
import { searchNotes } from "./search-notes.ts";
import { submitNote } from "./submit-note.ts";
import { TASK_TOOLS } from "./tasks.ts";

/**
 * THE tool registry: every tool the tool protocol serves (and the `openai` runtime offers). A new
 * tool is one file in this directory exporting a ToolDefinition, plus one line here.
 */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  submitNote,
  searchNotes,
  readNote,
  getTrace,
  searchKnowledge,
  readKnowledge,
  keepResultSoFar,
  ...TASK_TOOLS,
];

/** The built-in tools, then `host_<name>` for each configured host tool. */
export function toolsOf(config: Readonly<Pick<ConfigSnapshot, "hostTools">>): ToolDefinition[] {
  return [...BUILTIN_TOOLS, ...Object.values(config.hostTools).map(hostToolDefinition)];
}
