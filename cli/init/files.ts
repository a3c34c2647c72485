import { lstat, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { formatProblems, summarizeProblems } from "../../shared/config/format.ts";
import { loadConfig } from "../../shared/config/load.ts";

/** One file of a template, its path relative to the configuration directory. */
export interface TemplateFile {
  path: string;
  content: string;
  /** written only when no file is there, and then never overwritten, not even with --force */
  keepExisting?: boolean;
}

export interface WriteOutcome {
  /** what was written, in order; `overwritten` when --force replaced a file */
  written: { path: string; overwritten: boolean }[];
  /** keepExisting files that were there and stay as they are */
  kept: string[];
}

/** The template's files that already exist in `dir` (keepExisting ones aside): --force replaces them. */
export async function existingFiles(dir: string, files: readonly TemplateFile[]): Promise<string[]> {
  const found: string[] = [];
  for (const file of files) {
    if (!file.keepExisting && (await exists(join(dir, file.path)))) found.push(file.path);
  }
  return found;
}

/**
 * Writes the template into `dir` (made when missing). Without `force` a file that appeared since
 * existingFiles() was asked fails the write ("wx") rather than being replaced.
 */
export async function writeTemplate(
  dir: string,
  files: readonly TemplateFile[],
  force: boolean,
): Promise<WriteOutcome> {
  const outcome: WriteOutcome = { written: [], kept: [] };
  for (const file of files) {
    const path = join(dir, file.path);
    const there = await exists(path);
    if (there && (file.keepExisting || !force)) {
      if (file.keepExisting) outcome.kept.push(file.path);
      else throw new Error(`${path} appeared while svc init was writing; nothing of it was overwritten`);
      continue;
    }
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, file.content, { flag: there ? "w" : "wx" });
    outcome.written.push({ path: file.path, overwritten: there });
  }
  return outcome;
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return false;
      throw error;
    },
  );
}

export interface Validation {
  ok: boolean;
  /** the listing and summary line, as `svc config validate` prints them */
  report: string;
  /** variables of the written files that this environment lacks: checked with stand-in values */
  standIns: string[];
}

/**
 * The directory loaded as `svc config validate` loads it (the same loader). Of `variables`, those
 * this environment lacks get stand-in values, so what is checked is the files themselves; the caller
 * says which variables still have to be set. A private key is parsed when the configuration loads,
 * and no stand-in would pass for one: it stays unset, and the loader names it.
 */
export async function validateWritten(
  dir: string,
  variables: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Validation> {
  const standIns = variables.filter((name) => !env[name] && !/PRIVATE_KEY|PEM/.test(name));
  const withStandIns = { ...env, ...Object.fromEntries(standIns.map((name) => [name, standInValue(name)])) };
  const result = await loadConfig({ dir, env: withStandIns });
  const listing = result.problems.length > 0 ? `${formatProblems(result.problems)}\n\n` : "";
  if (!result.ok) {
    return {
      ok: false,
      report: `${listing}configuration invalid: ${summarizeProblems(result.problems)} (${dir})`,
      standIns,
    };
  }
  const { config } = result;
  const warnings = result.problems.length ? `, ${plural(result.problems.length, "warning")}` : "";
  const summary =
    `${plural(Object.keys(config.pipelines).length, "pipeline")}, ` +
    `${plural(Object.keys(config.webhooks.sources).length, "source")}, ` +
    `${plural(Object.keys(config.targets).length, "target")}${warnings}`;
  return { ok: true, report: `${listing}configuration valid: ${summary} (${dir})`, standIns };
}

/** A value no real secret has; digits where the configuration wants an id (an App's). */
function standInValue(name: string): string {
  return /_ID$/.test(name) ? "1" : `svc-init-stand-in-for-${name.toLowerCase()}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
