import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** `package/package.json` of an npm tarball, read with tar. */
export async function extractPackageJson(tarball: string): Promise<Record<string, unknown>> {
  const { stdout } = await execFileAsync("tar", ["-xzOf", tarball, "package/package.json"]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

export async function listTarball(tarball: string): Promise<string[]> {
  const { stdout } = await execFileAsync("tar", ["-tzf", tarball], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.split("\n").filter(Boolean);
}
