import { readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The svc package this CLI runs from. */
export interface Installation {
  root: string;
  name: string;
  version: string;
  /**
   * The marker every svc release carries in its package.json (`"svc": { "project": ... }`), which
   * `svc update` asks of a release before installing it: the name alone is no proof, since another
   * package can hold it on another registry (the public `svc` is an SVG converter).
   */
  project?: string;
  /**
   * npm's global prefix the package is installed under (`<prefix>/lib/node_modules/<name>`, a
   * scoped name being two directories), or undefined when svc runs from a source checkout, which
   * `svc update` cannot replace.
   */
  prefix?: string;
}

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export function installation(root = PACKAGE_ROOT): Installation {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    version: string;
    svc?: { project?: unknown };
  };
  const installedAt = `${sep}${join("lib", "node_modules", ...manifest.name.split("/"))}`;
  const prefix = root.endsWith(installedAt) ? root.slice(0, -installedAt.length) || sep : undefined;
  const project = typeof manifest.svc?.project === "string" ? manifest.svc.project : undefined;
  return {
    ...{ root, name: manifest.name, version: manifest.version },
    ...(project ? { project } : {}),
    ...(prefix ? { prefix } : {}),
  };
}
