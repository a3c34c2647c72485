import { cp, mkdir, readdir, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import { createTwoFilesPatch } from "diff";
import semver from "semver";
import { TODO_MARK } from "./edit.ts";
import { STEPS } from "./steps/index.ts";
import { ConfigTree, type MigrationChange, type MigrationTodo } from "./tree.ts";

export type { MigrationChange, MigrationTodo } from "./tree.ts";

/** One file the migration writes: `from` when it was renamed (SOUL.md → PERSONA.md, protocols/ → policies/). */
export interface FileChange {
  file: string;
  from?: string;
  before: string;
  after: string;
}

export interface MigrationPlan {
  dir: string;
  /** the newest release whose rewrites were applied */
  to: string;
  files: FileChange[];
  changes: MigrationChange[];
  todos: MigrationTodo[];
}

/** the release of the newest step: `--to` defaults to it */
export const LATEST_CONFIG_RELEASE = STEPS[STEPS.length - 1]!.release;

/** Reads the directory and computes every rewrite up to `to`; writes nothing. */
export async function planMigration(options: {
  dir: string;
  to?: string;
  env?: NodeJS.ProcessEnv;
}): Promise<MigrationPlan> {
  const to = options.to ?? LATEST_CONFIG_RELEASE;
  if (!semver.valid(to)) throw new Error(`--to ${JSON.stringify(to)} is not a SemVer version such as 0.9.0`);
  const tree = await ConfigTree.read(options.dir);
  for (const step of STEPS) {
    if (semver.lte(step.release, to)) step.apply(tree, { env: options.env ?? process.env });
  }
  const { texts, moves } = tree.render();
  const files: FileChange[] = [];
  for (const [file, after] of texts) {
    const from = moves.get(file);
    const before = tree.original(from ?? file) ?? "";
    if (from || before !== after) files.push({ file, ...(from ? { from } : {}), before, after });
  }
  files.sort((a, b) => (a.file < b.file ? -1 : 1));
  return { dir: options.dir, to, files, changes: tree.changes, todos: openTodos(texts, tree.todos) };
}

/**
 * Every to-do comment in the files as they will be, so a second run lists what the first one left
 * open (and one the operator resolved disappears), plus the file-level ones no comment can carry.
 */
function openTodos(texts: Map<string, string>, found: readonly MigrationTodo[]): MigrationTodo[] {
  const todos: MigrationTodo[] = [];
  for (const [file, text] of [...texts].sort(([a], [b]) => (a < b ? -1 : 1))) {
    text.split("\n").forEach((line, index) => {
      const at = line.indexOf(TODO_MARK);
      if (at >= 0 && line.slice(0, at).trim() === "#")
        todos.push({ file, line: index + 1, text: line.slice(at + TODO_MARK.length).trim() });
    });
  }
  return [...todos, ...found.filter((todo) => todo.line === undefined)];
}

/** The plan as one unified diff, `a/<file>` against `b/<file>`, as `git diff` prints it. */
export function unifiedDiff(plan: MigrationPlan): string {
  return plan.files
    .map((change) =>
      createTwoFilesPatch(
        `a/${change.from ?? change.file}`,
        `b/${change.file}`,
        change.before,
        change.after,
        "",
        "",
        {
          context: 3,
        },
      ).replace(/^=+\n/, ""),
    )
    .join("");
}

/** Copies the configuration (not the embedded database, workspaces, pid files or keys) next to it. */
export async function backupConfig(dir: string, now = new Date()): Promise<string> {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  let target = join(dirname(dir), `${basename(dir)}.backup-${stamp}`);
  for (let n = 2; await stat(target).catch(() => undefined); n++)
    target = join(dirname(dir), `${basename(dir)}.backup-${stamp}-${n}`);
  const skipped = new Set(["data", "workspaces", "run"].map((sub) => join(dir, sub)));
  await cp(dir, target, {
    recursive: true,
    errorOnExist: true,
    filter: (source) => !skipped.has(source) && !source.endsWith(".key"),
  });
  return target;
}

/** Writes the plan: each file through a temporary file and a rename, then removes renamed sources. */
export async function applyMigration(plan: MigrationPlan): Promise<void> {
  for (const change of plan.files) {
    const path = join(plan.dir, change.file);
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.migrate-${process.pid}.tmp`;
    await writeFile(temporary, change.after);
    await rename(temporary, path);
  }
  for (const change of plan.files) {
    if (!change.from) continue;
    await rm(join(plan.dir, change.from), { force: true });
    // the loader refuses a protocols/ directory even when empty
    const parent = dirname(join(plan.dir, change.from));
    if (relative(plan.dir, parent) && (await readdir(parent).catch(() => ["?"])).length === 0)
      await rmdir(parent).catch(() => {});
  }
}
