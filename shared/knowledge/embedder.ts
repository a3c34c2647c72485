import { runProcess } from "./run-process.ts";

const EMBED_TIMEOUT_MS = 10 * 60_000;

export class EmbedderError extends Error {}

/**
 * The host embedder runner: an executable on the daemon's PATH that reads one JSON string per
 * line on stdin and writes one JSON array of numbers per line on stdout, in the same order.
 */
export async function embedTexts(embedder: string, texts: readonly string[]): Promise<number[][]> {
  if (texts.length === 0) return [];
  const stdin = `${texts.map((text) => JSON.stringify(text)).join("\n")}\n`;
  const result = await runProcess([embedder], {
    env: { ...process.env },
    stdin,
    timeoutMs: EMBED_TIMEOUT_MS,
  });
  if (result.spawnError) {
    const reason =
      result.spawnError === "ENOENT"
        ? "no such executable on the PATH"
        : result.spawnError === "EACCES"
          ? "it is not executable"
          : result.spawnError;
    throw new EmbedderError(`knowledge index: the embedder "${embedder}" cannot start: ${reason}`);
  }
  if (result.code !== 0 || result.timedOut) {
    const why = result.timedOut
      ? `it ran longer than ${EMBED_TIMEOUT_MS} ms`
      : `it exited with ${result.code}${result.stderr.trim() ? `: ${result.stderr.trim().split("\n")[0]}` : ""}`;
    throw new EmbedderError(`knowledge index: the embedder "${embedder}" failed: ${why}`);
  }
  const vectors = result.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, index) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        value = undefined;
      }
      if (!Array.isArray(value) || value.some((n) => typeof n !== "number")) {
        throw new EmbedderError(
          `knowledge index: the embedder "${embedder}" wrote line ${index + 1} that is not a JSON array of numbers`,
        );
      }
      return value as number[];
    });
  if (vectors.length !== texts.length) {
    throw new EmbedderError(
      `knowledge index: the embedder "${embedder}" wrote ${vectors.length} vectors for ${texts.length} texts - it must write one line per input line`,
    );
  }
  return vectors;
}
