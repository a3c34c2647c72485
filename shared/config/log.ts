import { isAbsolute } from "node:path";
import { checkKeys, int, mapping, quote, type YamlMap } from "./read.ts";
import { type ConfigFile, formatPath } from "./source.ts";
import type { LogSettings } from "./types.ts";

export const DEFAULT_LOG_MAX_SIZE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_LOG_MAX_FILES = 5;
/** below this a file would rotate every few lines */
const MIN_LOG_SIZE_BYTES = 1024;

const UNIT_BYTES: Record<string, number> = {
  "": 1,
  b: 1,
  kb: 1_000,
  mb: 1_000_000,
  gb: 1_000_000_000,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};
const SIZE = /^(\d+)\s*([a-z]*)$/i;

/** `10MiB`, `500kB`, `1048576` → bytes; undefined when the text is not such a size. */
export function parseSize(text: string): number | undefined {
  const match = SIZE.exec(text.trim());
  const unit = match ? UNIT_BYTES[match[2]!.toLowerCase()] : undefined;
  return match && unit ? Number(match[1]) * unit : undefined;
}

/**
 * `log:` in daemon.yaml: a file beside stdout for hosts without journald, written by winston's
 * file transport and rotated by size. Every process writes its own file: its role goes before the
 * extension (`/var/log/svc/svc.log` → `svc.ingress.log`, `svc.worker.log`).
 */
export function readLog(f: ConfigFile, root: YamlMap): LogSettings | undefined {
  if (root.log === undefined || root.log === null) return undefined;
  const path = ["log"];
  const log = mapping(f, root.log, path);
  if (!log) return undefined;
  checkKeys(f, log, path, ["file", "max_size", "max_files"]);
  const file = log.file;
  const fileOk = typeof file === "string" && isAbsolute(file);
  if (!fileOk) {
    f.report(
      ["log", "file"],
      file === undefined || file === null ? "required" : "invalid_value",
      `"log.file" must be an absolute file path such as /var/log/svc/svc.log (each process writes its own file, e.g. svc.ingress.log)${typeof file === "string" ? ` (got ${quote(file)})` : ""}`,
    );
  }
  const maxSizeBytes = readSize(f, log);
  const maxFiles = int(f, log, "max_files", path, { min: 1, max: 1000 });
  const filesOk = log.max_files === undefined || log.max_files === null || maxFiles !== undefined;
  if (!fileOk || maxSizeBytes === undefined || !filesOk) return undefined;
  return { file, maxSizeBytes, maxFiles: maxFiles ?? DEFAULT_LOG_MAX_FILES };
}

function readSize(f: ConfigFile, log: YamlMap): number | undefined {
  const raw = log.max_size;
  if (raw === undefined || raw === null) return DEFAULT_LOG_MAX_SIZE_BYTES;
  const bytes = typeof raw === "number" && Number.isInteger(raw) ? raw : parseSize(String(raw));
  if (bytes !== undefined && bytes >= MIN_LOG_SIZE_BYTES) return bytes;
  f.report(
    ["log", "max_size"],
    "invalid_value",
    `"${formatPath(["log", "max_size"])}" must be a size of at least 1KiB such as 10MiB, 500kB or 1048576 (bytes) (got ${quote(raw)})`,
  );
  return undefined;
}
