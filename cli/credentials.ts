import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/**
 * CLI-to-daemon credentials, saved by `svc auth setup` in the user's configuration directory
 * (`$XDG_CONFIG_HOME/svc`, else `~/.config/svc`) with mode 0600, one token per daemon URL.
 * There is no environment fallback: `SVC_MANAGEMENT_TOKEN` was removed and is not read.
 */
export interface StoredCredential {
  token: string;
  owner: string;
  savedAt: string;
}

interface CredentialFile {
  daemons: Record<string, StoredCredential>;
}

export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  return join(xdg ? xdg : join(env.HOME?.trim() || homedir(), ".config"), "svc");
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(userConfigDir(env), "credentials.json");
}

/** One key per daemon: scheme, host and port, without a trailing slash. */
export function daemonKey(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, "")}`;
}

async function readFileSafe(path: string): Promise<CredentialFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { daemons: {} };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<CredentialFile>;
    return { daemons: parsed.daemons && typeof parsed.daemons === "object" ? parsed.daemons : {} };
  } catch {
    throw new Error(`${path} is not valid JSON; delete it and run \`svc auth setup\` again`);
  }
}

export async function readCredential(
  url: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StoredCredential | undefined> {
  const file = await readFileSafe(credentialsPath(env));
  return file.daemons[daemonKey(url)];
}

export async function saveCredential(
  url: string,
  credential: StoredCredential,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const path = credentialsPath(env);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const file = await readFileSafe(path);
  file.daemons[daemonKey(url)] = credential;
  // written beside and renamed over, created 0600, so the token is never readable by others, even briefly
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
  return path;
}
