import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { InvocationKnowledge } from "../../db/invocation-knowledge.ts";
import { outsiderMayRead } from "../../shared/config/knowledge.ts";
import type { ConfigSnapshot, Pipeline } from "../../shared/config/types.ts";
import { copySources, writeCatalog } from "../../shared/knowledge/delivery.ts";
import { retrieve } from "../../shared/knowledge/retrieve.ts";
import { DEFAULT_TOP_K, type Knowledge, type Passage } from "../../shared/knowledge/service.ts";
import type { Logger } from "../../shared/logger.ts";
import { modelEndpoints } from "../../shared/models/endpoint-cooldowns.ts";
import type { CredentialCooldowns } from "../credentials/cooldowns.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";

export interface RunKnowledgeDeps {
  knowledge?: Knowledge;
  config: Readonly<ConfigSnapshot>;
  logger: Logger;
  cooldowns: CredentialCooldowns;
  secrets: CredentialSecrets;
}

export interface RunKnowledgeInput {
  invocationId: string;
  pipeline: Pipeline;
  /** `context.outsider`: the event came from outside the repository's team (worker/event/context.ts) */
  event: { eventName: string; payload: unknown; context: { outsider: boolean } };
  runDir: string;
}

/** A document path (`knowledge/…`) the run may be given. */
export type Readable = (path: string) => boolean;

const EVERY_DOCUMENT: Readable = () => true;

/**
 * Which of the team's documents a run is given: all of them, unless its event came from an
 * outsider, whose run is given those under `knowledge.outsiders` only (none by default). Its
 * prompt is a stranger's text, and what the run reads it can post where the stranger reads it.
 */
export function readableBy(
  config: Pick<ConfigSnapshot, "knowledge">,
  event: { context: { outsider: boolean } },
): Readable {
  if (!event.context.outsider) return EVERY_DOCUMENT;
  const folder = config.knowledge.outsiders;
  return (path) => outsiderMayRead(folder, path);
}

/** What a run's prompt gets: retrieved passages (`prompt`), or a note saying where the knowledge is. */
export interface RunKnowledge {
  passages: Passage[];
  note?: string;
  /** what was delivered, for the invocation's `knowledge` column (the run records it) */
  record?: InvocationKnowledge;
}

/** Where to look, by delivery; the token is named, never written into the prompt. */
function note(delivery: "file" | "browse" | "search", runDir: string): string {
  if (delivery === "file") return `The team's documents are in ${runDir}/knowledge/ (read-only).`;
  if (delivery === "browse")
    return `The team's documents are in ${runDir}/knowledge/; ${runDir}/knowledge/CATALOG.md lists each one (title, path, first line). Read one with the read_knowledge tool (by path) or from its file.`;
  return "Search the team's documents with the search_knowledge tool, or with GET $SVC_DAEMON_URL/knowledge?q=<words> and the bearer token in $SVC_AGENT_TOKEN.";
}

/** How much of the event goes into the search text before a rewrite (or the terms) narrow it. */
const QUERY_CHARS = 2_000;

/**
 * The pipeline's `knowledge` block for one run: `prompt` retrieves passages for the prompt's
 * `## Knowledge` section (returned), `file` copies the sources to RUN_DIR/knowledge/, `browse`
 * adds RUN_DIR/knowledge/CATALOG.md, `search` leaves retrieval to the agent's search_knowledge
 * tool. Without a delivery, `prompt` is implied unless the method is `none`. What was delivered
 * (and `method_used`) is returned as `record`, for the run to record on the invocation.
 */
export async function prepareRunKnowledge(
  deps: RunKnowledgeDeps,
  input: RunKnowledgeInput,
): Promise<RunKnowledge> {
  const { knowledge } = deps;
  const { method } = input.pipeline.knowledge;
  const delivery = input.pipeline.knowledge.delivery ?? (method === "none" ? undefined : "prompt");
  if (!knowledge || knowledge.documentCount === 0 || !delivery) return { passages: [] };
  const readable = readableBy(deps.config, input.event);
  const record: InvocationKnowledge = { method, method_used: null, delivery, sources: [] };
  // an outsider's run given no document is told of none: the record says the delivery found nothing
  if (!knowledge.documents.some((doc) => readable(doc.path))) return { passages: [], record };
  let passages: Passage[] = [];
  // `file` and `browse` placed their files before the run's first process (placeKnowledgeFiles)
  if (delivery === "prompt" && method !== "none") {
    const text = searchText(input);
    const topK = deps.config.knowledge.retrieval.topK ?? DEFAULT_TOP_K;
    // an outsider's run ranks every document, so those kept from it take none of the topK places
    const ranked = readable === EVERY_DOCUMENT ? {} : { topK: Math.max(knowledge.documentCount, topK) };
    const result = await retrieve(
      knowledge,
      text,
      deps.config.knowledge.retrieval.rewrite.targets,
      {
        targets: deps.config.targets,
        keyOf: (target, credential) =>
          deps.cooldowns.isUsable(target, credential) ? deps.secrets.get(target, credential) : undefined,
        endpoints: modelEndpoints,
        logger: deps.logger,
      },
      { method, ...ranked },
    );
    passages = result.passages.filter((passage) => readable(passage.path)).slice(0, topK);
    record.method_used = result.methodUsed;
    record.query = result.query;
    record.sources = passages.map((p) => ({ path: p.path, line: p.line, score: p.score }));
  }
  return delivery === "prompt"
    ? { passages, record }
    : { passages, record, note: note(delivery, input.runDir) };
}

/**
 * `file` and `browse`: the documents copied into RUN_DIR/knowledge/ (with CATALOG.md for
 * `browse`) before the run's first process starts, while nothing of the run can swap a directory
 * the copy goes through for a link to a host directory. What an earlier attempt of the run left
 * there (such a link included) is removed first, never followed. `readable` (readableBy) keeps an
 * outsider's run to the documents given to outsiders, in the files and in the catalogue alike.
 */
export async function placeKnowledgeFiles(
  knowledge: Pick<Knowledge, "documentCount" | "documents" | "list"> | undefined,
  pipeline: Pick<Pipeline, "knowledge">,
  runDir: string,
  readable: Readable,
): Promise<void> {
  const { delivery } = pipeline.knowledge;
  if (!knowledge || knowledge.documentCount === 0) return;
  if (delivery !== "file" && delivery !== "browse") return;
  await rm(join(runDir, "knowledge"), { recursive: true, force: true });
  const documents = knowledge.documents.filter((doc) => readable(doc.path));
  if (documents.length === 0) return;
  await copySources(documents, runDir);
  const list = async () => (await knowledge.list()).filter((doc) => readable(doc.path));
  if (delivery === "browse") await writeCatalog({ list }, runDir);
}

/** The event name, the instructions and the payload's text values: what the run is about. */
function searchText(input: RunKnowledgeInput): string {
  const parts = [input.event.eventName, input.pipeline.instructions];
  const walk = (value: unknown, depth: number) => {
    if (depth > 6 || parts.join(" ").length > QUERY_CHARS) return;
    if (typeof value === "string") parts.push(value);
    else if (Array.isArray(value)) for (const item of value) walk(item, depth + 1);
    else if (value && typeof value === "object")
      for (const inner of Object.values(value)) walk(inner, depth + 1);
  };
  walk(input.event.payload, 0);
  return parts.join("\n").slice(0, QUERY_CHARS);
}
