import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/**
 * svc updates itself with npm, the package manager that installed it, always as an argv (no shell).
 * npm reads its own configuration (registry, auth, proxy, `npm_config_*` variables), so svc has none.
 */
export interface Published {
  latest?: string;
  versions: string[];
}

export class NpmError extends Error {}

/** `npm view <name> dist-tags versions --json`: what the configured registry publishes. */
export async function publishedVersions(name: string, env: NodeJS.ProcessEnv): Promise<Published> {
  const stdout = await npmView(name, ["dist-tags", "versions"], env);
  const answer = JSON.parse(stdout) as { "dist-tags"?: { latest?: string }; versions?: string | string[] };
  const versions = answer.versions === undefined ? [] : [answer.versions].flat();
  return { ...(answer["dist-tags"]?.latest ? { latest: answer["dist-tags"].latest } : {}), versions };
}

/** What a release says of itself in its package.json, as the registry serves it. */
export interface ReleaseManifest {
  name?: unknown;
  version?: unknown;
  description?: unknown;
  svc?: unknown;
}

/**
 * `npm view <name>@<version> name version description svc --json`: the fields of one release's
 * manifest that tell whose package it is (cli/update/identity.ts), read before anything is installed.
 */
export async function releaseManifest(
  name: string,
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<ReleaseManifest> {
  const spec = `${name}@${version}`;
  const stdout = await npmView(spec, ["name", "version", "description", "svc"], env);
  // one release asked for, several fields: npm answers one object (nothing at all for no match)
  const answer: unknown = stdout.trim() ? JSON.parse(stdout) : {};
  return typeof answer === "object" && answer !== null && !Array.isArray(answer) ? answer : {};
}

/** The registry npm is configured with, for messages. */
export async function registry(env: NodeJS.ProcessEnv): Promise<string> {
  try {
    return (await execFileAsync("npm", ["config", "get", "registry"], { env })).stdout.trim();
  } catch {
    return "the configured registry";
  }
}

/** `npm install -g [--prefix <prefix>] <name>@<version>`, npm's output passed through as progress. */
export async function installGlobal(
  spec: string,
  prefix: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const args = ["install", "--global", ...(prefix ? ["--prefix", prefix] : []), spec];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn("npm", args, { env, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", resolve);
  });
  if (code !== 0) throw new NpmError(`npm ${args.join(" ")} failed (exit ${code}); svc was not changed`);
}

function npmErrorSummary(stdout = "", stderr = ""): string {
  try {
    const parsed = JSON.parse(stdout) as { error?: { summary?: string; code?: string } };
    if (parsed.error?.summary) return `${parsed.error.code ?? "error"}: ${parsed.error.summary}`;
  } catch {
    // npm printed no JSON error: fall back to its stderr
  }
  const line = stderr
    .split("\n")
    .map((text) => text.replace(/^npm (ERR!|error) ?/, "").trim())
    .find((text) => text && !text.startsWith("A complete log"));
  return line ?? "unknown error";
}

/** `npm view <spec> <fields> --json`'s output; a missing npm or a registry refusal is an NpmError naming both. */
async function npmView(spec: string, fields: string[], env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout } = await execFileAsync("npm", ["view", spec, ...fields, "--json"], {
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const failed = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (failed.code === "ENOENT") throw new NpmError("npm is not on PATH; svc updates itself with npm");
    const reason = npmErrorSummary(failed.stdout, failed.stderr);
    throw new NpmError(`npm could not read ${spec} from the registry (${await registry(env)}): ${reason}`);
  }
}
