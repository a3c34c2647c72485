import { posix } from "node:path";

/** A changed file and its changed lines (additions + deletions, `git diff --numstat`). */
export interface ChangedFile {
  path: string;
  lines: number;
}

/** One part of a split review: files in path order, and their lines summed. */
export interface PathGroup {
  files: ChangedFile[];
  lines: number;
}

/** A large review split by path groups: the tasks svc created, one per group (review-split.ts). */
export interface ReviewSplit {
  /** the pull request's changed lines and the limit it is above */
  lines: number;
  max: number;
  parts: { taskId: string; files: string[]; lines: number }[];
}

/**
 * Splits a pull request's changed files into path groups for an orchestrated review
 * (docs/worker.md, "Large pull requests"). Deterministic: the same files give the same groups, so
 * a retried run agrees with the tasks it created before.
 *
 * Files are taken in path order and kept with their directory: a directory is split only when its
 * own lines are above `maxLines` (into runs of files at or under it; a file above it alone is a
 * group of its own). Neighbouring directories are packed into one group while the group stays at
 * or under `maxLines`, so small directories do not each cost an agent. Over `maxGroups`, the two
 * neighbouring groups with the fewest lines together are merged until the count fits: the limit
 * then gives way, never a file.
 */
export function pathGroups(files: readonly ChangedFile[], maxLines: number, maxGroups: number): PathGroup[] {
  const sorted = [...files].sort((a, b) => compare(a.path, b.path));
  // a directory's files, or runs of them when the directory alone is above the limit
  const units: PathGroup[] = [];
  for (const directory of byDirectory(sorted)) {
    const total = sum(directory);
    if (total <= maxLines) units.push({ files: directory, lines: total });
    else
      units.push(
        ...packed(
          directory.map((file) => ({ files: [file], lines: file.lines })),
          maxLines,
        ),
      );
  }
  const groups = packed(units, maxLines);
  while (groups.length > Math.max(1, maxGroups)) {
    let smallest = 0;
    for (let i = 1; i < groups.length - 1; i++)
      if (groups[i]!.lines + groups[i + 1]!.lines < groups[smallest]!.lines + groups[smallest + 1]!.lines)
        smallest = i;
    const [a, b] = [groups[smallest]!, groups[smallest + 1]!];
    groups.splice(smallest, 2, { files: [...a.files, ...b.files], lines: a.lines + b.lines });
  }
  return groups;
}

/** Consecutive units joined while their sum stays at or under `maxLines`; a unit above it stays alone. */
function packed(units: readonly PathGroup[], maxLines: number): PathGroup[] {
  const groups: PathGroup[] = [];
  for (const unit of units) {
    const last = groups.at(-1);
    if (last && last.lines + unit.lines <= maxLines) {
      last.files.push(...unit.files);
      last.lines += unit.lines;
    } else groups.push({ files: [...unit.files], lines: unit.lines });
  }
  return groups;
}

/** The sorted files cut where their directory changes. */
function byDirectory(sorted: readonly ChangedFile[]): ChangedFile[][] {
  const directories: ChangedFile[][] = [];
  let current: string | undefined;
  for (const file of sorted) {
    const directory = posix.dirname(file.path);
    if (directory !== current || directories.length === 0) directories.push([]);
    current = directory;
    directories.at(-1)!.push(file);
  }
  return directories;
}

/**
 * Path order by segments, so a directory's files come before its subdirectories' and siblings stay
 * together (`a/b.ts`, `a/c/d.ts`, `a-b/e.ts`), whatever characters the names hold.
 */
function compare(a: string, b: string): number {
  const [x, y] = [a.split("/"), b.split("/")];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    // a file sorts before a subdirectory of the same directory
    const fileX = i === x.length - 1;
    const fileY = i === y.length - 1;
    if (fileX !== fileY) return fileX ? -1 : 1;
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

function sum(files: readonly ChangedFile[]): number {
  return files.reduce((total, file) => total + file.lines, 0);
}
