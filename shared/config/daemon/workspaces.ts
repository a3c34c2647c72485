import { parseSize } from "../log.ts";
import { checkKeys, int, quote, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { child } from "./read-helpers.ts";

export const DEFAULT_CHECKOUT_RETENTION_DAYS = 30;
export const DEFAULT_TRANSCRIPT_RETENTION_DAYS = 90;
/** `workspaces.repo_cache.max_size`: what the worker host's repository mirrors may hold together */
export const DEFAULT_REPO_CACHE_MAX_SIZE_BYTES = 20 * 1024 ** 3;
/** below this one mid-sized repository's mirror would not fit, and every fetch would be cold */
const MIN_REPO_CACHE_SIZE_BYTES = 100 * 1024 ** 2;

export function readWorkspaces(f: ConfigFile, root: YamlMap): DaemonSettings["workspaces"] {
  const workspaces = child(f, root, "workspaces", []) ?? {};
  const path = ["workspaces"];
  checkKeys(f, workspaces, path, ["checkoutRetentionDays", "transcriptRetentionDays", "repo_cache"]);
  const checkout =
    int(f, workspaces, "checkoutRetentionDays", path, { min: 1, max: 36_500 }) ??
    DEFAULT_CHECKOUT_RETENTION_DAYS;
  const explicit = int(f, workspaces, "transcriptRetentionDays", path, { min: 1, max: 36_500 });
  const transcript = explicit ?? DEFAULT_TRANSCRIPT_RETENTION_DAYS;
  if (transcript < checkout && explicit !== undefined) {
    f.report(
      [...path, "transcriptRetentionDays"],
      "value_clamped",
      `"workspaces.transcriptRetentionDays" (${transcript}) is below "workspaces.checkoutRetentionDays" (${checkout}) and is raised to ${checkout} - transcripts are kept at least as long as checkouts`,
      "warning",
    );
  }
  return {
    checkoutRetentionDays: checkout,
    transcriptRetentionDays: Math.max(transcript, checkout),
    repoCache: readRepoCache(f, workspaces),
  };
}

/** `workspaces.repo_cache: { max_size }`: the worker host's mirrors (worker/checkout/cache.ts). */
function readRepoCache(f: ConfigFile, workspaces: YamlMap): DaemonSettings["workspaces"]["repoCache"] {
  const path = ["workspaces", "repo_cache"];
  const cache = child(f, workspaces, "repo_cache", ["workspaces"], " such as { max_size: 20GiB }") ?? {};
  checkKeys(f, cache, path, ["max_size"]);
  const raw = cache.max_size;
  if (raw === undefined || raw === null) return { maxSizeBytes: DEFAULT_REPO_CACHE_MAX_SIZE_BYTES };
  const bytes = typeof raw === "number" ? raw : typeof raw === "string" ? parseSize(raw) : undefined;
  if (bytes !== undefined && Number.isSafeInteger(bytes) && bytes >= MIN_REPO_CACHE_SIZE_BYTES) {
    return { maxSizeBytes: bytes };
  }
  f.report(
    [...path, "max_size"],
    "invalid_value",
    `"workspaces.repo_cache.max_size" must be a size of at least 100MiB such as 20GiB, 500MiB or 21474836480 (bytes) (got ${quote(raw)})`,
  );
  return { maxSizeBytes: DEFAULT_REPO_CACHE_MAX_SIZE_BYTES };
}
