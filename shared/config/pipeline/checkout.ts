import { bool, checkKeys, describe, mapping, quote, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath } from "../source.ts";
import type { CheckoutSettings } from "../types.ts";

export const MAX_CHECKOUT_DEPTH = 1_000_000;
export const MAX_CHECKOUT_PATHS = 200;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f]/;
// cone mode takes directories; git would read these as a pattern or an escape
const PATTERN = /[*?[\\]/;

/** What a pipeline without `checkout:` gets: what a review needs, every file, no submodules or LFS. */
export function defaultCheckout(): CheckoutSettings {
  return { submodules: false, lfs: false, paths: [] };
}

/**
 * `checkout: { depth, submodules, lfs, paths }`: how much of the repository a run's worktree
 * holds (worker/checkout/). Each key is optional; a wrong one is reported and takes its default.
 */
export function readCheckout(f: ConfigFile, root: YamlMap): CheckoutSettings {
  const checkout = defaultCheckout();
  if (root.checkout === undefined || root.checkout === null) return checkout;
  const raw = mapping(
    f,
    root.checkout,
    ["checkout"],
    " such as { depth: 50, submodules: true, lfs: true, paths: [services/api] }",
  );
  if (!raw) return checkout;
  checkKeys(f, raw, ["checkout"], ["depth", "submodules", "lfs", "paths"]);
  const depth = readDepth(f, raw.depth);
  if (depth !== undefined) checkout.depth = depth;
  checkout.submodules = readSubmodules(f, raw.submodules);
  checkout.lfs = bool(f, raw, "lfs", ["checkout"]) ?? false;
  checkout.paths = readPaths(f, raw.paths);
  return checkout;
}

/** How a refused value is shown: strings quoted, numbers and booleans as written, the rest by kind. */
function shown(value: unknown): string {
  if (typeof value === "string") return quote(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return describe(value);
}

function readDepth(f: ConfigFile, value: unknown): CheckoutSettings["depth"] {
  if (value === undefined || value === null) return undefined;
  if (value === "full") return "full";
  if (typeof value === "number" && Number.isInteger(value) && value > MAX_CHECKOUT_DEPTH) {
    f.report(
      ["checkout", "depth"],
      "invalid_value",
      `"checkout.depth" must be at most ${MAX_CHECKOUT_DEPTH} (got ${value}) - write "full" for the whole history`,
    );
    return undefined;
  }
  if (typeof value === "number" && Number.isInteger(value) && value >= 1) return value;
  f.report(
    ["checkout", "depth"],
    typeof value === "number" || typeof value === "string" ? "invalid_value" : "invalid_type",
    `"checkout.depth" must be a positive integer or "full", not ${shown(value)}`,
  );
  return undefined;
}

function readSubmodules(f: ConfigFile, value: unknown): CheckoutSettings["submodules"] {
  if (value === undefined || value === null) return false;
  if (value === true || value === false || value === "recursive") return value;
  f.report(
    ["checkout", "submodules"],
    "invalid_value",
    `"checkout.submodules" must be false, true or "recursive", not ${shown(value)}`,
  );
  return false;
}

function readPaths(f: ConfigFile, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    f.report(
      ["checkout", "paths"],
      "invalid_type",
      `"checkout.paths" must be a list of directories, not ${describe(value)} - e.g. paths: [services/api, libs/shared]`,
    );
    return [];
  }
  if (value.length > MAX_CHECKOUT_PATHS) {
    f.report(
      ["checkout", "paths"],
      "invalid_value",
      `"checkout.paths" lists ${value.length} directories, more than ${MAX_CHECKOUT_PATHS} - name their common parent directories instead`,
    );
    return [];
  }
  const paths: string[] = [];
  value.forEach((item, index) => {
    const path = ["checkout", "paths", index];
    if (typeof item !== "string" || item.trim() === "") {
      f.report(path, "invalid_type", `"${formatPath(path)}" must be a non-empty string, e.g. services/api`);
      return;
    }
    const refused = pathRefusal(item);
    if (refused) {
      f.report(
        path,
        "invalid_value",
        `"${formatPath(path)}" must be a directory relative to the repository's root such as services/api, ${refused} (got ${quote(item)})`,
      );
      return;
    }
    const dir = item.replace(/\/+$/, "");
    if (!paths.includes(dir)) paths.push(dir);
  });
  return paths;
}

/** Why `item` is no directory of a cone-mode sparse checkout, or undefined when it is one. */
function pathRefusal(item: string): string | undefined {
  if (CONTROL.test(item)) return "without control characters (a newline, NUL)";
  if (item.startsWith("/")) return "not an absolute path";
  if (item.startsWith("-")) return 'not starting with "-"';
  if (PATTERN.test(item)) return 'not a pattern: cone mode takes directories, without "*", "?", "[" or "\\"';
  const segments = item.replace(/\/+$/, "").split("/");
  if (segments.includes("..")) return 'without ".." segments';
  if (segments.some((segment) => segment === "" || segment === ".")) return 'without "." or empty segments';
  return undefined;
}
