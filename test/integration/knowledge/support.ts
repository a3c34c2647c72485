import { chmod, cp, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";

export const FIXTURE_KNOWLEDGE = join(import.meta.dirname, "../../fixtures/knowledge/knowledge");

/** A temporary configuration directory holding a copy of the fixture corpus under knowledge/. */
export async function corpusDir(prefix = "svc-knowledge-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await cp(FIXTURE_KNOWLEDGE, join(dir, "knowledge"), { recursive: true });
  return dir;
}

export function knowledgeConfig(
  dir: string,
  retrieval: Partial<ConfigSnapshot["knowledge"]["retrieval"]> = {},
): Pick<ConfigSnapshot, "dir" | "knowledge"> {
  return { dir, knowledge: { retrieval: { engine: "local", rewrite: { targets: [] }, ...retrieval } } };
}

export async function writeExecutable(path: string, body: string): Promise<string> {
  await writeFile(path, body);
  await chmod(path, 0o755);
  return path;
}
