import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The svc package this CLI runs from. */
export interface Installation {
  root: string;
  name: string;
  version: string;
  /**
   * npm's global prefix the package is installed under (`<prefix>/lib/node_modules/<name>`), or
   * undefined when svc runs from a source checkout, which `svc update` cannot replace.
   */
  prefix?: string;
}

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export function installation(root = PACKAGE_ROOT): Installation {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    version: string;
  };
  const modules = dirname(root);
  const prefix =
    basename(root) === manifest.name &&
    basename(modules) === "node_modules" &&
    basename(dirname(modules)) === "lib"
      ? dirname(dirname(modules))
      : undefined;
  return { root, name: manifest.name, version: manifest.version, ...(prefix ? { prefix } : {}) };
}
