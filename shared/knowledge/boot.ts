import type { ConfigSnapshot } from "../config/types.ts";
import type { Logger } from "../logger.ts";
import { Knowledge } from "./service.ts";

/**
 * The boot step of the ingress and the worker: with knowledge sources present, qmd must be at
 * its floor and the index current (rebuilt here when the sources changed). A rejection is fatal
 * to start-up; its message names the floor or the failing engine and the fix.
 */
export async function openKnowledgeForRole(
  config: Pick<ConfigSnapshot, "dir" | "knowledge">,
  logger: Logger,
): Promise<Knowledge> {
  const knowledge = await Knowledge.open(config, logger);
  if (knowledge.documentCount > 0) {
    logger.info(
      `knowledge: ${knowledge.documentCount} documents, ${knowledge.engine} engine, qmd ${knowledge.toolVersion}`,
      {
        event: "knowledge.ready",
        documents: knowledge.documentCount,
        engine: knowledge.engine,
        qmd: knowledge.toolVersion,
      },
    );
  }
  return knowledge;
}
