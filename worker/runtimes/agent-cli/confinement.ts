import { constants } from "node:fs";
import { access, readdir, realpath } from "node:fs/promises";
import { delimiter, dirname, join, sep } from "node:path";

/**
 * What keeps an agent CLI run on the worker's host (no `sandbox` on the pipeline) inside its
 * worktree. A prompt-injected agent that reads `<config dir>/instance.key`, `daemon.yaml`,
 * RUN_DIR's `mcp.json` (the run token) or anything else of the worker's user leaks it through its
 * result; each CLI is told, in its own syntax, that the worktree is all it may read. A sandboxed
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
 */
export async function claudeCodeSettings(
  worktree: string,
  agentAccess: "read" | "edit",
): Promise<Record<string, unknown>> {
  const root = await realpath(worktree);
  const tools = agentAccess === "edit" ? ["Read", "Edit"] : ["Read"];
  // `//` starts an absolute path in a rule; a directory's rule covers what is below it
  const rule = (tool: string, path: string) => [`${tool}(/${path})`, `${tool}(/${path}/**)`];
  const outside = await pathsBeside(root);
  return {
    permissions: {
      blockReadsOutsideWorkingDirectories: true,
      blockWritesOutsideWorkingDirectories: true,
      additionalDirectories: [],
      allow: tools.map((tool) => `${tool}(/${root}/**)`),
      deny: outside.flatMap((path) => tools.flatMap((tool) => rule(tool, path))),
      disableBypassPermissionsMode: "disable",
    },
    disableAllHooks: true,
  };
}

/** Every entry beside `root` and beside each directory above it, up to `/`: all there is outside it today. */
async function pathsBeside(root: string): Promise<string[]> {
  const paths: string[] = [];
  let inner = root;
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch {
      names = []; // a directory the worker cannot list: the read block still refuses all of it
    }
    for (const name of names) {
      const path = join(dir, name);
      if (path !== inner && !RULE_SYNTAX.test(path)) paths.push(path);
    }
    if (dirname(dir) === dir) return paths;
    inner = dir;
  }
}

/** The name of the permission profile svc gives Codex. */
export const CODEX_PROFILE = "svc";

/**
 * Codex's permission profile (`default_permissions`), as `-c` overrides: its shell commands run in
 * its own sandbox (bubblewrap and seccomp on Linux, Seatbelt on macOS) where only the system's
 * base files (`:minimal`), the worktree (its workspace root; writable for `edit`, its `.git` kept
 * read-only) and Codex's own install (it re-executes itself as the sandbox helper) exist; every
 * other path, the config directory and RUN_DIR included, is absent, and there is no network. The
 * legacy `--sandbox read-only` reads the whole filesystem, and any `--sandbox` or `sandbox_mode`
 * would turn the profile off, so neither is given.
 */
export function codexPermissions(agentAccess: "read" | "edit", install: string | undefined): string[] {
  const workspace =
    agentAccess === "edit" ? `{"."="write",".git"="read",".codex"="read",".agents"="read"}` : `{"."="read"}`;
  const filesystem = [`":minimal"="read"`, `":workspace_roots"=${workspace}`];
  if (install) filesystem.push(`${JSON.stringify(install)}="read"`);
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
