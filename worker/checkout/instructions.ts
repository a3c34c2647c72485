import { spawn } from "node:child_process";
import {
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  type Stats,
  writeSync,
} from "node:fs";
import { git, gitEnv } from "./git.ts";

/**
 * The repository's instructions to agents, which agent CLIs read from the working tree on their
 * own: a pull request from outside the team could rewrite them into orders for the agent that
 * reviews it. For such a run the worktree holds the base commit's instead (docs/worker.md,
 * "Checkouts").
 */

/** Files read as instructions wherever they lie (Claude Code reads a folder's CLAUDE.md once it works there). */
const INSTRUCTION_FILES = new Set([
  "CLAUDE.md",
  "CLAUDE.local.md",
  "AGENTS.md",
  "AGENTS.override.md",
  "GEMINI.md",
]);
/** Folders of a CLI's project settings, rules, skills, commands and subagents, wherever they lie. */
const AGENT_FOLDERS = new Set([".claude", ".codex", ".agents", ".gemini"]);
/** Copilot's, from the root only. */
const ROOT_PATHS = [".github/copilot-instructions.md", ".github/instructions"];

export function isInstructionPath(path: string): boolean {
  const parts = path.split("/");
  return (
    parts.some((part) => AGENT_FOLDERS.has(part)) ||
    INSTRUCTION_FILES.has(parts.at(-1) ?? "") ||
    ROOT_PATHS.some((root) => path === root || path.startsWith(`${root}/`))
  );
}

/** One instruction file of the base commit, as the worktree gets it. */
export interface InstructionFile {
  path: string;
  data: Buffer;
  mode: number;
}

/** What an outsider's run sees: the base commit's instruction files, or none when the base is unknown. */
export interface BaseInstructions {
  base?: { sha: string; ref: string };
  files: InstructionFile[];
}

/**
 * The instruction files of commit `sha`, read from svc's mirror (never from the worktree, whose
 * objects a setup step could have rewritten). A link among them is read as what it names inside
 * the commit (`cat-file --follow-symlinks`); one leading out of the commit, dangling or looping is
 * left out.
 */
export async function readBaseInstructions(mirror: string, sha: string): Promise<InstructionFile[]> {
  const listing = await git(["--git-dir", mirror, "ls-tree", "-r", "-z", "--full-tree", sha]);
  const wanted: { path: string; mode: number }[] = [];
  for (const record of listing.split("\0")) {
    const tab = record.indexOf("\t");
    const [mode, type] = record.slice(0, tab).split(" ");
    const path = record.slice(tab + 1);
    // a path with a line break cannot be asked for by line: left out, which is the safe side
    if (type === "blob" && isInstructionPath(path) && !path.includes("\n"))
      wanted.push({ path, mode: mode === "100755" ? 0o755 : 0o644 });
  }
  if (wanted.length === 0) return [];
  const input = wanted.map(({ path }) => `${sha}:${path}\n`).join("");
  const answers = parseBatch(await catFile(mirror, input));
  return wanted.flatMap((file, index) => {
    const data = answers[index];
    return data ? [{ ...file, data }] : [];
  });
}

/** `git cat-file --batch --follow-symlinks` in the mirror: its whole answer, as bytes. */
export function catFile(mirror: string, input: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const args = ["--git-dir", mirror, "cat-file", "--batch", "--follow-symlinks"];
    const child = spawn("git", args, { env: gitEnv(), stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`git cat-file failed: ${stderr}`)),
    );
    child.stdin.end(input);
  });
}

/** Each answer of a batch: a blob's bytes, or undefined (missing, a tree, a link leading out of the commit). */
export function parseBatch(answer: Buffer): (Buffer | undefined)[] {
  const blobs: (Buffer | undefined)[] = [];
  let at = 0;
  while (at < answer.length) {
    const end = answer.indexOf(10, at);
    const header = answer.subarray(at, end).toString("utf8").split(" ");
    at = end + 1;
    if (header.at(-1) === "missing") {
      blobs.push(undefined);
      continue;
    }
    // `<oid> <type> <size>`, or `symlink|dangling|loop|notdir <size>`: a body and a line break follow
    const size = Number(header.at(-1));
    blobs.push(header.length === 3 && header[1] === "blob" ? answer.subarray(at, at + size) : undefined);
    at += size + 1;
  }
  return blobs;
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY } = constants;

/** `name` in the directory open as `dirFd`, whatever that directory's path is now (no-follow.ts). */
const under = (dirFd: number, name: string) => `/proc/self/fd/${dirFd}/${name}`;

/**
 * Makes the worktree's instruction files the base commit's: every instruction file or folder in it
 * (the pull request's, a setup step's) is removed, then `files` are written. Nothing is read from
 * the worktree and no link in it is followed: the walk goes through open directories, an entry is
 * removed by its own name (a link, not what it names), and a file goes only below real folders
 * (where a link stands, it is left out). Called while none of the run's processes is alive.
 */
export function placeInstructions(worktree: string, files: InstructionFile[]): void {
  const root = openSync(worktree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    removeInstructions(root, "");
    for (const file of files) writeInstruction(root, file);
  } finally {
    closeSync(root);
  }
}

function removeInstructions(dirFd: number, prefix: string): void {
  for (const entry of readdirSync(under(dirFd, "."), { withFileTypes: true })) {
    if (entry.name === ".git") continue;
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (isInstructionPath(path)) {
      rmSync(under(dirFd, entry.name), { recursive: true, force: true });
      continue;
    }
    if (!entry.isDirectory()) continue;
    const fd = openDir(dirFd, entry.name);
    if (fd === undefined) continue;
    try {
      removeInstructions(fd, path);
    } finally {
      closeSync(fd);
    }
  }
}

/** The directory `name` under `dirFd`, opened without following a link; undefined when it is none. */
function openDir(dirFd: number, name: string): number | undefined {
  try {
    return openSync(under(dirFd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

function writeInstruction(root: number, file: InstructionFile): void {
  const parts = file.path.split("/");
  const name = parts.pop()!;
  let dirFd = openSync(under(root, "."), O_RDONLY | O_DIRECTORY);
  try {
    for (const part of parts) {
      let next = openDir(dirFd, part);
      if (next === undefined) {
        try {
          mkdirSync(under(dirFd, part), { mode: 0o755 });
        } catch (error) {
          // a link or a file of the pull request's stands there: the base's file is left out
          if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
          throw error;
        }
        next = openDir(dirFd, part)!;
        ownLikeParent(next, fstatSync(dirFd));
      }
      closeSync(dirFd);
      dirFd = next;
    }
    const fd = openSync(under(dirFd, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, file.mode);
    try {
      let written = 0;
      while (written < file.data.length) written += writeSync(fd, file.data, written);
      ownLikeParent(fd, fstatSync(dirFd));
    } finally {
      closeSync(fd);
    }
  } finally {
    closeSync(dirFd);
  }
}

/**
 * A sandboxed run's worktree is its container user's (exec/sandbox/handover.ts): what is written
 * into it becomes that user's too, so the agent reads and, with `edit`, changes it as the rest.
 */
function ownLikeParent(fd: number, parent: Stats): void {
  const stats = fstatSync(fd);
  if (stats.uid !== parent.uid || stats.gid !== parent.gid) fchownSync(fd, parent.uid, parent.gid);
}
