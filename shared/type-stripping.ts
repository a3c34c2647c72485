import { dirname, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The `execArgv` a Node child process running one of svc's .ts files directly (not through bin/svc.js)
 * needs: installed from npm, svc lives under node_modules, where Node strips no types, and
 * bin/strip-types.js does it instead. From a source checkout nothing is needed.
 */
export function typeStrippingExecArgv(): string[] {
  if (!ROOT.split(sep).includes("node_modules")) return [];
  return [`--import=${pathToFileURL(join(ROOT, "bin", "strip-types.js")).href}`];
}
