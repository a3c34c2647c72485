import { constants } from "node:fs";
import { access, readdir, realpath } from "node:fs/promises";
import { delimiter, dirname, join, sep } from "node:path";

/**
 * What keeps an agent CLI run on the worker's host (no `sandbox` on the pipeline) inside its
 * worktree. A prompt-injected agent that reads `<config dir>/instance.key`, `daemon.yaml`, the
 * agent folder's `mcp.json` (the run token) or anything else of the worker's user leaks it through
 * its result; each CLI is told, in its own syntax, that the worktree is all it may read. A sandboxed
 * run gets none of this: its container holds nothing else, and the host paths named here mean
 * nothing inside it.
 */

/** Characters that are rule syntax in a Claude Code permission rule: a name holding one gets no rule. */
const RULE_SYNTAX = /[*?[\]{}()\\!]/;

/**
 * Claude Code's settings (`--settings`): its read and write blocks, which refuse file-tool calls
 * outside the working directories (the worktree, which is its cwd; `additionalDirectories` adds
 * none) in every permission mode and through symlinks; deny rules naming every path beside the
 * worktree and beside each of its parents, as a second fence should a future version change what
 * the blocks cover; and no hooks. `--setting-sources ""` (claude-code.ts) keeps the repository's
 * own `.claude/settings*.json` out, so nothing here can be widened by what the worktree holds.
 *
 * `runDir`, given for a review that keeps its result so far there (worker/run/partial.ts), is a
 * second working directory, left out of the deny rules: the agent's Write of that one file is
 * pre-approved by claude-code.ts, any other write there is refused (`dontAsk`) unless
 * `agent_access: edit` approved the Write tool everywhere. Its real path, as the rules need.
 */
export async function claudeCodeSettings(
  worktree: string,
  agentAccess: "read" | "edit",
  runDir?: string,
): Promise<Record<string, unknown>> {
  const root = await realpath(worktree);
  const tools = agentAccess === "edit" ? ["Read", "Edit"] : ["Read"];
  // `//` starts an absolute path in a rule; a directory's rule covers what is below it
  const rule = (tool: string, path: string) => [`${tool}(/${path})`, `${tool}(/${path}/**)`];
  const outside = await pathsBeside(runDir ? [root, runDir] : [root]);
  return {
    permissions: {
      blockReadsOutsideWorkingDirectories: true,
      blockWritesOutsideWorkingDirectories: true,
      additionalDirectories: runDir ? [runDir] : [],
      allow: tools.map((tool) => `${tool}(/${root}/**)`),
      deny: outside.flatMap((path) => tools.flatMap((tool) => rule(tool, path))),
      disableBypassPermissionsMode: "disable",
    },
    disableAllHooks: true,
  };
}

/**
 * Every entry beside the `roots` and beside each directory above them, up to `/`, except the roots
 * and the directories holding them: all there is outside them today.
 */
async function pathsBeside(roots: string[]): Promise<string[]> {
  const above = new Set<string>();
  for (const root of roots) for (let dir = dirname(root); !above.has(dir); dir = dirname(dir)) above.add(dir);
  const kept = new Set([...roots, ...above]);
  const paths: string[] = [];
  for (const dir of above) {
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch {
      names = []; // a directory the worker cannot list: the read block still refuses all of it
    }
    for (const name of names) {
      const path = join(dir, name);
      if (!kept.has(path) && !RULE_SYNTAX.test(path)) paths.push(path);
    }
  }
  return paths;
}

/** The name of the permission profile svc gives Codex. */
export const CODEX_PROFILE = "svc";

/**
 * What Codex's `:minimal` shows its commands on Linux besides /dev and /proc, read-only (Codex
 * 0.169.0: `ls /` in its sandbox). A configuration directory below one of them, as in the
 * documented /etc/svc/config, is shown too unless the profile hides it.
 */
const MINIMAL_ROOTS = ["/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"];

export interface CodexPaths {
  /** the worktree, its symlinks resolved */
  worktree: string;
  /** the configuration directory, its symlinks resolved: the worktree lies below it */
  configDir: string;
  /** where Codex is installed (codexInstall) */
  install: string | undefined;
}

/**
 * Codex's permission profile (`default_permissions`), as `-c` overrides: its shell commands run in
 * its own sandbox (bubblewrap on Linux) where only the system's base files (`:minimal`), the
 * worktree (its workspace root; writable for `edit`, its `.git`, `.codex` and `.agents` kept
 * read-only) and Codex's own install (it re-executes itself as the sandbox helper) exist, and
 * there is no network. The legacy `--sandbox read-only` reads the
 * whole filesystem, and any `--sandbox` or `sandbox_mode` would turn the profile off, so neither
 * is given.
 *
 * When `:minimal` would show the configuration directory, the profile hides all of it (`none`)
 * and opens the worktree again below it. Codex's Linux sandbox reopens a path below a hidden one
 * only when it is writable, so there the worktree is writable for `read` too: the agent can change
 * its worktree, and still reads nothing outside it.
 */
export function codexPermissions(paths: CodexPaths, agentAccess: "read" | "edit"): string[] {
  const { worktree, configDir, install } = paths;
  const path = (value: string) => JSON.stringify(value);
  const protectedNames = [".git", ".codex", ".agents"];
  const shown = MINIMAL_ROOTS.some((root) => configDir.startsWith(`${root}/`));
  const filesystem = [`":minimal"="read"`];
  if (shown && worktree.startsWith(`${configDir}/`)) {
    filesystem.push(`${path(configDir)}="none"`, `${path(worktree)}="write"`);
    if (agentAccess === "edit")
      for (const name of protectedNames) filesystem.push(`${path(join(worktree, name))}="read"`);
  } else if (agentAccess === "edit") {
    const kept = protectedNames.map((name) => `${path(name)}="read"`);
    filesystem.push(`":workspace_roots"={"."="write",${kept.join(",")}}`);
  } else {
    filesystem.push(`":workspace_roots"={"."="read"}`);
  }
  if (install) filesystem.push(`${path(install)}="read"`);
  return [
    `default_permissions="${CODEX_PROFILE}"`,
    `permissions.${CODEX_PROFILE}.filesystem={${filesystem.join(",")}}`,
    `permissions.${CODEX_PROFILE}.network={enabled=false}`,
  ];
}

/**
 * Where the Codex executable `command` (a path, or a name looked up on `path`) is installed: the
 * `node_modules` directory holding its npm wrapper and the platform package with the native
 * binary, or the binary's own directory for a standalone install. Undefined when it is not found:
 * starting it then fails on its own, with the spawn error in the diagnostic.
 */
export async function codexInstall(command: string, path: string | undefined): Promise<string | undefined> {
  const found = command.includes(sep) ? command : await onPath(command, path ?? "");
  if (!found) return undefined;
  let real: string;
  try {
    real = await realpath(found);
  } catch {
    return undefined; // a dangling link: the spawn fails and says so
  }
  const parts = real.split(sep);
  const modules = parts.lastIndexOf("node_modules");
  return modules > 0 ? parts.slice(0, modules + 1).join(sep) : dirname(real);
}

async function onPath(command: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, command);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this PATH entry: the next one is tried
    }
  }
  return undefined;
}
