import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { AGENT_CLIS, type AgentCliRuntime, pinnedVersion } from "../../shared/agent-clis/pins.ts";

const run = promisify(execFile);

/**
 * Where installed CLIs are kept between test runs: outside the repository (a clean `npm ci` must
 * not throw them away, and they are hundreds of MB), keyed by package and version.
 */
export function cliCacheDir(): string {
  return process.env.SVC_AGENT_CLI_CACHE ?? join(tmpdir(), "svc-agent-clis");
}

/**
 * The pinned version of a runtime's CLI, installed from npm into the cache on first use and
 * reused after; the path of its executable. The CLIs are never dependencies of svc itself. An
 * install that fails throws with npm's own reason, so a test that needs the CLI fails rather than
 * passing without it.
 */
export async function installPinnedCli(runtime: AgentCliRuntime): Promise<string> {
  const { package: name, command } = AGENT_CLIS[runtime];
  const version = pinnedVersion(runtime);
  const dir = join(cliCacheDir(), `${name.replace("/", "+")}@${version}`);
  const bin = join(dir, "node_modules", ".bin", command);
  if (await exists(bin)) return bin;
  await mkdir(cliCacheDir(), { recursive: true });
  // installed beside the final place and renamed into it: a concurrent test file or an
  // interrupted install never leaves a half-installed directory that looks complete
  const staging = await mkdtemp(`${dir}.installing-`);
  try {
    await run(
      "npm",
      ["install", "--prefix", staging, "--no-save", "--no-audit", "--no-fund", `${name}@${version}`],
      { timeout: 600_000, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`installing ${name}@${version} from npm failed: ${stderr?.trim() || message}`);
  }
  try {
    await rename(staging, dir);
  } catch (error) {
    // another test file installed the same version meanwhile: its copy is as good as ours
    await rm(staging, { recursive: true, force: true });
    if (!(await exists(bin))) throw error;
  }
  return bin;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false; // not there (yet): the caller installs it
  }
}
