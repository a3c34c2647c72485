import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join, sep } from "node:path";

/**
 * oclif reads `oclif.manifest.json` to list commands and their flags without importing them, and
 * then imports only the command being run; without it every command module (express, pg-boss, …)
 * is imported on each call, which costs seconds. The manifest is generated, never edited: it is
 * rebuilt whenever a file under cli/ or package.json is newer than it, or the command files changed.
 */
const MANIFEST = "oclif.manifest.json";

function newestInputMtime(root: string): { mtimeMs: number; commandFiles: string[] } {
  let mtimeMs = statSync(join(root, "package.json")).mtimeMs;
  const commandFiles: string[] = [];
  const commandsDir = join(root, "cli", "commands") + sep;
  for (const entry of readdirSync(join(root, "cli"), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const path = join(entry.parentPath, entry.name);
    mtimeMs = Math.max(mtimeMs, statSync(path).mtimeMs);
    if (path.startsWith(commandsDir)) commandFiles.push(path.slice(root.length + 1));
  }
  return { mtimeMs, commandFiles: commandFiles.sort() };
}

function manifestIsFresh(root: string): boolean {
  try {
    const manifestPath = join(root, MANIFEST);
    const { mtimeMs, commandFiles } = newestInputMtime(root);
    // an installed package ships its manifest (built by `prepack`); npm sets the files' times as it
    // extracts them, in no useful order, so only the list of commands says whether it still fits
    const installed = root.split(sep).includes("node_modules");
    if (!installed && statSync(manifestPath).mtimeMs < mtimeMs) return false;
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as {
      version?: string;
      commands: Record<string, { relativePath?: string[] }>;
    };
    // oclif warns about, and distrusts, a manifest of another version of the package
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version?: string };
    if (manifest.version !== version) return false;
    const listed = Object.values(manifest.commands)
      .map((command) => (command.relativePath ?? []).join("/"))
      .sort();
    return JSON.stringify(listed) === JSON.stringify(commandFiles);
  } catch {
    return false;
  }
}

/** Rebuilds the manifest when stale; a read-only install keeps working, only slower. */
export async function ensureCommandManifest(root: string): Promise<void> {
  if (manifestIsFresh(root)) return;
  const { Plugin } = await import("@oclif/core");
  const plugin = new Plugin({ root, isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
  await plugin.load();
  const temporary = join(root, `${MANIFEST}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, `${JSON.stringify(plugin.manifest, null, 2)}\n`);
    renameSync(temporary, join(root, MANIFEST));
  } catch {
    // not writable (a read-only image): oclif falls back to importing every command
  }
}
