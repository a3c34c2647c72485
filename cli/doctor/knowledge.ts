import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem } from "../../shared/config/types.ts";
import { findOnPath, isExecutable } from "../../shared/executables.ts";
import { checkQmdVersion, RetrievalToolError, resolveQmd } from "../../shared/knowledge/qmd.ts";
import { discoverSources } from "../../shared/knowledge/sources.ts";
import type { CheckOutcome, DoctorCheck } from "./types.ts";

/**
 * What the daemon checks at boot about knowledge, said before it refuses: qmd at its floor when
 * documents exist, the embedder runner on the PATH with the vector engine, and the note that
 * `hybrid` serves BM25 when no engine supplies vectors.
 */
export const knowledgeCheck: DoctorCheck = {
  name: "knowledge",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration does not load", problems: [] };
    const { config } = loaded;
    const documents = await discoverSources(config.dir);
    if (documents.length === 0) {
      return {
        status: "skipped",
        detail: "no documents under knowledge/: nothing to retrieve",
        problems: [],
      };
    }
    const problems: ConfigProblem[] = [];
    const { bin, engine, embedder } = config.knowledge.retrieval;
    let version: string;
    try {
      version = await checkQmdVersion(resolveQmd(bin), bin);
    } catch (error) {
      if (!(error instanceof RetrievalToolError)) throw error;
      new ConfigFile("daemon.yaml", problems).report(
        ["knowledge", "retrieval", "bin"],
        "retrieval_tool_floor",
        error.message,
      );
      return { status: "error", detail: error.message, problems };
    }
    if (
      engine === "vector" &&
      embedder &&
      !(embedder.includes("/") ? isExecutable(embedder) : findOnPath(embedder, ctx.env))
    ) {
      const message = `knowledge index: the embedder "${embedder}" cannot start: no such executable on the PATH`;
      new ConfigFile("daemon.yaml", problems).report(
        ["knowledge", "retrieval", "embedder"],
        "embedder_missing",
        `${message} - install it on the daemon's PATH or fix "knowledge.retrieval.embedder"`,
      );
      return { status: "error", detail: message, problems };
    }
    const hybrid = Object.values(config.pipelines).filter((p) => p.knowledge.method === "hybrid");
    const detail = `${documents.length} documents, ${engine} engine, qmd ${version}`;
    // /ask retrieves with hybrid unless told otherwise, so the note applies even without such pipelines
    if (engine !== "vector") {
      const users = ["/ask by default", ...hybrid.map((p) => `pipeline ${p.name}`)].join(", ");
      return {
        status: "warning",
        detail: `${detail}; note: hybrid retrieval (${users}) serves BM25 - the local engine has no vectors (set knowledge.retrieval.engine: vector, or pin method: bm25)`,
        problems: [],
      };
    }
    return { status: "ok", detail, problems: [] };
  },
};
