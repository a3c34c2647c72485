import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { knowledgeSection } from "../../shared/knowledge/delivery.ts";
import { retrieve } from "../../shared/knowledge/retrieve.ts";
import type { RewriteDeps } from "../../shared/knowledge/rewrite.ts";
import type { Knowledge, RetrievalMethod } from "../../shared/knowledge/service.ts";
import type { ChatMessage } from "../../shared/models/chat.ts";
import { askTarget, type TargetDeps } from "./targets.ts";

export interface AskRequest {
  question: string;
  /** ordered failover; defaults to `ask.targets` */
  targets?: string[];
  method?: RetrievalMethod;
}

export interface AskAnswer {
  answer: string;
  target: string;
  method: RetrievalMethod;
  sources: { path: string; line: number; score: number }[];
}

export class AskUnavailable extends Error {
  readonly reasons: { target: string; reason: string }[];
  constructor(reasons: { target: string; reason: string }[]) {
    super(
      `no target could answer: ${reasons.map((r) => `${r.target}: ${r.reason}`).join("; ")} - check the targets' model APIs and credentials (svc doctor)`,
    );
    this.reasons = reasons;
  }
}

const SYSTEM =
  "You answer questions from a team's documents. Use the passages under ## Knowledge when they " +
  "answer the question and cite them as path:line. When they do not, say so and answer briefly.";

/**
 * POST /ask: retrieve (after an optional query rewrite), then ask the targets in order with the
 * passages; the first usable answer wins. Nothing usable → AskUnavailable with a reason per target.
 */
export async function answerQuestion(
  request: AskRequest,
  deps: TargetDeps & { config: Readonly<ConfigSnapshot>; knowledge: Knowledge | undefined },
): Promise<AskAnswer> {
  const { config } = deps;
  const method = request.method ?? "hybrid";
  let passages: Awaited<ReturnType<Knowledge["search"]>>["passages"] = [];
  let methodUsed = method;
  if (deps.knowledge && deps.knowledge.documentCount > 0) {
    const rewriteDeps: RewriteDeps = {
      targets: config.targets,
      keyOf: (target, credential) => {
        const source = config.targets[target]?.credentials.find((c) => c.name === credential)?.secret;
        try {
          return source ? deps.resolveSecret(source) : undefined;
        } catch {
          return undefined; // a stored secret this ingress did not load: that credential is skipped
        }
      },
      endpoints: deps.endpoints,
      logger: deps.logger,
    };
    const result = await retrieve(
      deps.knowledge,
      request.question,
      config.knowledge.retrieval.rewrite.targets,
      rewriteDeps,
      { method },
    );
    passages = result.passages;
    methodUsed = result.methodUsed;
  }
  const section = knowledgeSection(passages);
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: `${section ? `${section}\n\n` : ""}## Question\n\n${request.question}` },
  ];
  const reasons: { target: string; reason: string }[] = [];
  for (const name of request.targets ?? config.ask.targets) {
    const target = config.targets[name];
    if (!target) {
      reasons.push({ target: name, reason: "not defined in daemon.yaml" });
      continue;
    }
    const answer = await askTarget(target, messages, deps);
    if (answer.ok) {
      return {
        answer: answer.answer,
        target: name,
        method: methodUsed,
        sources: passages.map((p) => ({ path: p.path, line: p.line, score: round(p.score) })),
      };
    }
    deps.logger.warn(`ask: target ${name} could not answer: ${answer.reason}`, {
      event: "ask.target_failed",
      target: name,
      reason: answer.reason,
    });
    reasons.push({ target: name, reason: answer.reason });
  }
  throw new AskUnavailable(reasons);
}

function round(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
