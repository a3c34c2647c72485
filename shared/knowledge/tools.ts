import { readKnowledge, searchKnowledge } from "./delivery.ts";
import type { Knowledge, RetrievalMethod } from "./service.ts";

/**
 * The read tools of delivery `search` and `browse`, as the tool protocol registers them: a name,
 * a description the agent reads, a JSON Schema of the arguments, and `call`, which checks the
 * arguments and answers text (JSON) or a precise error. Calling one needs `knowledge:read`
 * (an agent's sandboxed token carries it).
 */
export interface KnowledgeTool {
  name: "search_knowledge" | "read_knowledge";
  description: string;
  inputSchema: Record<string, unknown>;
  call(knowledge: Knowledge, args: unknown): Promise<{ text: string; isError: boolean }>;
}

const MAX_QUERY_BYTES = 8 * 1024;

function fail(message: string) {
  return { text: message, isError: true };
}

function asObject(args: unknown): Record<string, unknown> | undefined {
  return args && typeof args === "object" && !Array.isArray(args)
    ? (args as Record<string, unknown>)
    : undefined;
}

export const searchKnowledgeTool: KnowledgeTool = {
  name: "search_knowledge",
  description:
    "Search the team's documents (runbooks, conventions). Returns the best passages with their path, line and score.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "what to look for, in words" },
      topK: { type: "integer", minimum: 1, maximum: 50, description: "passages to return (default 5)" },
      method: { type: "string", enum: ["bm25", "hybrid"], description: "retrieval method (default bm25)" },
    },
    required: ["query"],
    additionalProperties: false,
  },
  async call(knowledge, args) {
    const input = asObject(args);
    const query = input?.query;
    if (typeof query !== "string" || query.trim() === "") return fail('"query" must be a non-empty string');
    if (Buffer.byteLength(query) > MAX_QUERY_BYTES)
      return fail(`"query" is longer than ${MAX_QUERY_BYTES} bytes`);
    const { topK, method } = input!;
    if (topK !== undefined && (!Number.isInteger(topK) || (topK as number) < 1 || (topK as number) > 50))
      return fail('"topK" must be an integer from 1 to 50');
    if (method !== undefined && method !== "bm25" && method !== "hybrid")
      return fail('"method" must be bm25 or hybrid');
    const found = await searchKnowledge(knowledge, {
      query,
      ...(topK !== undefined ? { topK: topK as number } : {}),
      ...(method !== undefined ? { method: method as RetrievalMethod } : {}),
    });
    return { text: JSON.stringify(found), isError: false };
  },
};

export const readKnowledgeTool: KnowledgeTool = {
  name: "read_knowledge",
  description:
    "Read one of the team's documents by its path as CATALOG.md lists it (for example knowledge/runbook.md).",
  inputSchema: {
    type: "object",
    properties: { path: { type: "string", description: "a path from CATALOG.md" } },
    required: ["path"],
    additionalProperties: false,
  },
  async call(knowledge, args) {
    const path = asObject(args)?.path;
    if (typeof path !== "string" || path === "") return fail('"path" must be a path from CATALOG.md');
    const read = await readKnowledge(knowledge, { path });
    return "error" in read ? fail(read.error) : { text: read.text, isError: false };
  },
};

export const KNOWLEDGE_TOOLS: readonly KnowledgeTool[] = [searchKnowledgeTool, readKnowledgeTool];
