import { copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import YAML from "yaml";
import { loadConfig } from "../shared/config/load.ts";
import type { ConfigProblem } from "../shared/config/types.ts";

/**
 * `svc pipeline shadow` and `svc pipeline promote`: edits of a pipeline's file that keep its
 * comments and layout (yaml's Document), checked by loading the configuration afterwards. What the
 * load finds wrong in the files edited is undone, so a refused edit changes nothing.
 */
export class PipelineEditError extends Error {}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// `[local]` stays `[local]`: yaml pads flow collections by default, which rewrites lines not edited
const KEEP_LAYOUT = { flowCollectionPadding: false } as const;

export function livePath(dir: string, name: string): string {
  if (!NAME.test(name))
    throw new PipelineEditError(`"${name}" is not a pipeline name (letters, digits, ., _ and -)`);
  return join(dir, "pipelines", `${name}.yaml`);
}

async function readDocument(path: string, what: string): Promise<{ text: string; doc: YAML.Document }> {
  const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") throw new PipelineEditError(`${what} ${path} does not exist`);
    throw error;
  });
  const doc = YAML.parseDocument(text);
  if (doc.errors.length > 0)
    throw new PipelineEditError(`${path} is not valid YAML: ${doc.errors[0]!.message}`);
  return { text, doc };
}

/** Loads the configuration and undoes `restore` when a file it edited has an error. */
async function checked(dir: string, files: string[], restore: () => Promise<void>): Promise<void> {
  const result = await loadConfig({ dir, env: process.env });
  const own = result.problems.filter(
    (problem: ConfigProblem) => problem.severity === "error" && files.includes(problem.file),
  );
  if (own.length === 0) return;
  await restore();
  throw new PipelineEditError(
    `nothing changed: ${own.map((problem) => `${problem.file}: ${problem.path ? `${problem.path}: ` : ""}${problem.message}`).join("; ")}`,
  );
}

/**
 * Gives pipeline `name` a shadow: `candidate` (any pipeline file) becomes
 * `pipelines/<name>.next.yaml` unless it is already a file of pipelines/, and the live file gets
 * `shadow: { version_file, share }`.
 */
export async function shadowPipeline(
  dir: string,
  name: string,
  candidate: string,
  options: { share: number; force: boolean },
): Promise<{ versionFile: string; copied: boolean }> {
  const live = livePath(dir, name);
  const { text, doc } = await readDocument(live, "the pipeline file");
  await readDocument(candidate, "the candidate file");
  const inPipelines = join(dir, "pipelines", basename(candidate)) === candidate && candidate !== live;
  const versionFile = inPipelines ? `pipelines/${basename(candidate)}` : `pipelines/${name}.next.yaml`;
  const target = join(dir, versionFile);
  let copied = false;
  if (!inPipelines) {
    const exists = await readFile(target).then(
      () => true,
      () => false,
    );
    if (exists && !options.force)
      throw new PipelineEditError(`${target} exists; pass --force to replace it with ${candidate}`);
    await copyFile(candidate, target);
    copied = true;
  }
  doc.set("shadow", doc.createNode({ version_file: versionFile, share: options.share }, { flow: true }));
  await writeFile(live, doc.toString(KEEP_LAYOUT));
  await checked(dir, [`pipelines/${name}.yaml`, versionFile], async () => {
    await writeFile(live, text);
    if (copied) await rm(target, { force: true });
  });
  return { versionFile, copied };
}

/** Takes pipeline `name`'s shadow away; the candidate's file stays. */
export async function unshadowPipeline(dir: string, name: string): Promise<string | undefined> {
  const live = livePath(dir, name);
  const { doc } = await readDocument(live, "the pipeline file");
  const versionFile = doc.getIn(["shadow", "version_file"]);
  if (!doc.has("shadow")) return undefined;
  doc.delete("shadow");
  await writeFile(live, doc.toString(KEEP_LAYOUT));
  return typeof versionFile === "string" ? versionFile : undefined;
}

/**
 * Makes pipeline `name`'s shadow candidate the live version: the live file is kept as
 * `pipelines/previous/<name>@<version>.yaml` (a folder the loader does not read), and the
 * candidate's file becomes the live one, without a shadow.
 */
export async function promotePipeline(
  dir: string,
  name: string,
): Promise<{ from: string; to: string; kept: string }> {
  const live = livePath(dir, name);
  const { text, doc } = await readDocument(live, "the pipeline file");
  const versionFile = doc.getIn(["shadow", "version_file"]);
  if (typeof versionFile !== "string")
    throw new PipelineEditError(
      `pipeline ${name} has no shadow to promote; give it one with svc pipeline shadow ${name} <file>`,
    );
  const candidatePath = join(dir, versionFile);
  const { text: candidateText, doc: candidate } = await readDocument(candidatePath, "the candidate file");
  // a candidate names no shadow of its own (the configuration refuses one): it goes live as written
  if (candidate.has("shadow"))
    throw new PipelineEditError(`${candidatePath} names a shadow of its own; delete it before promoting`);
  const from = String(doc.get("version") ?? "(inherited)");
  const to = String(candidate.get("version") ?? "(inherited)");
  const kept = join(dir, "pipelines", "previous", `${name}@${from}.yaml`);
  await mkdir(join(dir, "pipelines", "previous"), { recursive: true });
  await writeFile(kept, text, { flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "EEXIST")
      throw new PipelineEditError(
        `${kept} exists already: version ${from} was promoted away before; raise the live version first`,
      );
    throw error;
  });
  await writeFile(live, candidateText);
  await rename(candidatePath, `${candidatePath}.promoted`);
  await checked(dir, [`pipelines/${name}.yaml`], async () => {
    await writeFile(live, text);
    await rename(`${candidatePath}.promoted`, candidatePath);
    await writeFile(candidatePath, candidateText);
    await rm(kept, { force: true });
  });
  await rm(`${candidatePath}.promoted`, { force: true });
  return { from, to, kept };
}
