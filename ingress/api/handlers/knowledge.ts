import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { Knowledge, type RetrievalMethod } from "../../../shared/knowledge/service.ts";
import { modelEndpoints } from "../../../shared/models/endpoint-cooldowns.ts";
import { AskUnavailable, answerQuestion } from "../../ask/answer.ts";
import { knowledgeReadBy, NONE_FOR_OUTSIDERS } from "../../auth/knowledge.ts";
import { ok } from "../context.ts";
import { ApiError, badRequest } from "../errors.ts";
import { allowOnlyKeys, bodyObject, queryInt, queryString } from "../input.ts";
import type { ApiDependencies, Reply, RouteContext } from "../types.ts";

/** Longest question /ask takes: 8 KB of UTF-8. */
export const MAX_QUESTION_BYTES = 8 * 1024;
const METHODS: readonly RetrievalMethod[] = ["bm25", "hybrid"];

const opened = new WeakMap<Readonly<ConfigSnapshot>, Promise<Knowledge>>();

/** The ingress opens its knowledge at start-up; an app built without it (tests) opens it on first use. */
export function knowledgeOf(deps: ApiDependencies): Promise<Knowledge> {
  if (deps.knowledge) return Promise.resolve(deps.knowledge);
  let promise = opened.get(deps.config);
  if (!promise) {
    promise = Knowledge.open(deps.config, deps.logger);
    opened.set(deps.config, promise);
  }
  return promise;
}

/**
 * The knowledge as the caller reads it (auth/knowledge.ts): a run token of an outsider's run holds
 * `knowledge:read` like any run's, so these routes narrow it exactly as the knowledge tools do.
 */
async function readableKnowledge(ctx: RouteContext): Promise<Knowledge> {
  const knowledge = knowledgeReadBy(ctx.principal, ctx.deps.config, await knowledgeOf(ctx.deps));
  if (!knowledge) throw new ApiError(403, "forbidden", NONE_FOR_OUTSIDERS);
  return knowledge;
}

/** POST /ask `{ question, targets?, method? }` → `{ answer, target, method, sources }`. */
export async function askRoute(ctx: RouteContext): Promise<Reply> {
  const body = bodyObject(ctx.req);
  allowOnlyKeys(body, ["question", "targets", "method"]);
  const { question, targets, method } = body;
  if (typeof question !== "string" || question.trim() === "") {
    throw badRequest(
      '"question" is required: a non-empty string, e.g. { "question": "How do I restore a backup?" }',
    );
  }
  if (Buffer.byteLength(question, "utf8") > MAX_QUESTION_BYTES) {
    throw badRequest(`"question" is longer than ${MAX_QUESTION_BYTES} bytes - shorten it`);
  }
  const defined = Object.keys(ctx.deps.config.targets);
  if (
    targets !== undefined &&
    (!Array.isArray(targets) || targets.length === 0 || targets.some((t) => typeof t !== "string"))
  ) {
    throw badRequest('"targets" must be a non-empty list of target names, tried in order');
  }
  const unknown = ((targets as string[] | undefined) ?? []).filter((name) => !defined.includes(name));
  if (unknown.length) {
    throw badRequest(
      `unknown target${unknown.length > 1 ? "s" : ""} ${unknown.map((t) => `"${t}"`).join(", ")} - defined: ${defined.join(", ") || "none"}`,
    );
  }
  if (method !== undefined && !METHODS.includes(method as RetrievalMethod)) {
    throw badRequest(`"method" must be one of ${METHODS.join(", ")}`);
  }
  const { deps } = ctx;
  const knowledge = await readableKnowledge(ctx);
  try {
    return ok(
      await answerQuestion(
        {
          question,
          ...(targets ? { targets: targets as string[] } : {}),
          ...(method ? { method: method as RetrievalMethod } : {}),
        },
        {
          config: deps.config,
          knowledge,
          pool: deps.pool,
          logger: deps.logger,
          configDir: deps.config.dir,
          resolveSecret: deps.resolveSecret,
          endpoints: modelEndpoints,
        },
      ),
    );
  } catch (error) {
    if (error instanceof AskUnavailable) {
      throw new ApiError(503, "ask_unavailable", error.message, { targets: error.reasons });
    }
    throw error;
  }
}

/** GET /knowledge: the documents (path, title, size, indexed_at); `?q=` searches without a model. */
export async function knowledgeRoute(ctx: RouteContext): Promise<Reply> {
  const knowledge = await readableKnowledge(ctx);
  const q = queryString(ctx.req, "q");
  if (q === undefined) {
    const documents = await knowledge.list();
    return ok({
      engine: knowledge.engine,
      indexed_at: knowledge.indexedAt ?? null,
      documents: documents.map((d) => ({
        path: d.path,
        title: d.title,
        size: d.size,
        indexed_at: d.indexed_at,
      })),
    });
  }
  if (q.trim() === "") throw badRequest('query parameter "q" must not be empty');
  const method = queryString(ctx.req, "method") ?? "bm25";
  if (!METHODS.includes(method as RetrievalMethod)) {
    throw badRequest(`query parameter "method" must be one of ${METHODS.join(", ")}`);
  }
  const limit = queryInt(ctx.req, "limit", ctx.deps.config.knowledge.retrieval.topK ?? 5, 1, 100);
  const result = await knowledge.search(q, { method: method as RetrievalMethod, topK: limit });
  return ok({ query: q, method: result.methodUsed, passages: result.passages });
}
