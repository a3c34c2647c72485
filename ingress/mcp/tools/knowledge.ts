import { z } from "zod";
import {
  type KnowledgeTool,
  readKnowledgeTool,
  searchKnowledgeTool,
} from "../../../shared/knowledge/tools.ts";
import { knowledgeOf } from "../../api/handlers/knowledge.ts";
import { knowledgeReadBy, NONE_FOR_OUTSIDERS } from "../../auth/knowledge.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `search_knowledge` and `read_knowledge` (knowledge delivery `search` and `browse`): read tools
 * over the team's documents. The SDK checks the declared input; the knowledge tool checks it again
 * and answers text, so a run and the tool protocol see the same answers.
 */
function knowledgeTool(tool: KnowledgeTool, input: z.ZodObject): ToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    access: "read",
    input,
    async run(args, { principal, deps }) {
      // an outsider's run reads the documents given to outsiders only (auth/knowledge.ts)
      const knowledge = knowledgeReadBy(principal, deps.config, await knowledgeOf(deps));
      if (!knowledge) return textResult(NONE_FOR_OUTSIDERS, true);
      const { text, isError } = await tool.call(knowledge, args);
      return textResult(text, isError);
    },
  };
}

export const searchKnowledge = knowledgeTool(
  searchKnowledgeTool,
  z
    .object({
      query: z.string().min(1).max(8192).describe("what to look for, in words"),
      topK: z.number().int().min(1).max(50).optional().describe("passages to return (default 5)"),
      method: z.enum(["bm25", "hybrid"]).optional().describe("retrieval method (default bm25)"),
    })
    .strict(),
);

export const readKnowledge = knowledgeTool(
  readKnowledgeTool,
  z.object({ path: z.string().min(1).describe("a path from CATALOG.md") }).strict(),
);
