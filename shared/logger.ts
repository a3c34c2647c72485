import { accessSync, constants, statSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import winston from "winston";
import { LOG_SECRET_KEYS, maskSecretKeys, REDACTED } from "./redact.ts";

/**
 * Logging through winston: one JSON object per line with a stable `event` field (pretty on a TTY or
 * with SVC_LOG_FORMAT=pretty), on stdout, and optionally into a size-rotated file (`log:` in
 * daemon.yaml). Secrets never reach a line: the `redactSecrets` format masks known secret-bearing
 * keys wherever they appear (the rules of shared/redact.ts, which the stored artifacts of a run
 * share), and callers log ids and names, never payloads, headers or tokens.
 */
export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  /** whether a line at `level` would be written: hot paths ask before building the line's fields */
  isLevelEnabled(level: LogLevel): boolean;
}

/** npm's levels, as SVC_LOG_LEVEL has always accepted them; a line is written at its level or below. */
export type LogLevel = "error" | "warn" | "info" | "http" | "verbose" | "debug" | "silly";
const LEVELS = winston.config.npm.levels;

/** winston's own keys of a line, never masked: the message is the caller's sentence */
const LINE_KEYS = new Set(["level", "message"]);

/**
 * The winston format that masks secret-bearing keys of a line. The line's fields are depth 1, so
 * each field's value is searched 6 levels deep (as the hand-written logger before it did).
 */
export const redactSecrets = winston.format((info) => {
  const line = info as Record<string, unknown>;
  for (const key of Object.keys(line)) {
    if (LINE_KEYS.has(key)) continue;
    const value = line[key];
    if (value === undefined) delete line[key];
    else line[key] = LOG_SECRET_KEYS.test(key) ? REDACTED : maskSecretKeys(value, 1);
  }
  return info;
});

/** `<timestamp> <role> <level> <event> <message> {other fields}` for a person at a terminal. */
const prettyLine = winston.format.printf((info) => {
  const { level, message, role, event, timestamp, ...extra } = info as Record<string, unknown>;
  const tail = Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : "";
  return `${timestamp} ${role} ${level} ${event ?? ""} ${message}${tail}`;
});

export interface LoggerOptions {
  /** the process role, e.g. `ingress` or `worker` */
  role: string;
  level?: string;
  format?: "json" | "pretty";
  /** defaults to stdout */
  stream?: NodeJS.WritableStream;
}

/** The `log:` block of daemon.yaml. */
export interface LogFileSettings {
  /** absolute path; the process role goes before the extension (`svc.log` → `svc.ingress.log`) */
  file: string;
  maxSizeBytes: number;
  maxFiles: number;
}

const winstonOf = new WeakMap<Logger, winston.Logger>();
const roleOf = new WeakMap<Logger, string>();

export function createLogger(options: LoggerOptions): Logger {
  const wanted = options.level ?? process.env.SVC_LOG_LEVEL ?? "info";
  const pretty =
    (options.format ??
      (process.env.SVC_LOG_FORMAT as "json" | "pretty" | undefined) ??
      (process.stdout.isTTY ? "pretty" : "json")) === "pretty";
  const base = winston.createLogger({
    levels: LEVELS,
    level: wanted in LEVELS ? wanted : "info",
    format: winston.format.combine(redactSecrets(), winston.format.timestamp()),
    transports: [
      new winston.transports.Stream({
        stream: options.stream ?? process.stdout,
        format: pretty ? prettyLine : winston.format.json(),
      }),
    ],
    exitOnError: false,
  });
  const { role } = options;
  const at =
    (level: LogLevel) =>
    (message: string, fields: Record<string, unknown> = {}): void => {
      // checked first: a line above the level costs one lookup, and no object is built
      if (!base.isLevelEnabled(level)) return;
      // handed over as one object: winston's (message, meta) form would read `%s` in a message as a
      // placeholder and drop the fields
      base.log({ role, ...fields, level, message });
    };
  const logger: Logger = {
    error: at("error"),
    warn: at("warn"),
    info: at("info"),
    debug: at("debug"),
    isLevelEnabled: (level) => base.isLevelEnabled(level),
  };
  winstonOf.set(logger, base);
  roleOf.set(logger, role);
  return logger;
}

/** The file one process writes for `log.file`: its role before the extension. */
export function logFileFor(file: string, role: string): string {
  const ext = extname(file);
  return join(dirname(file), `${basename(file, ext)}.${role}${ext}`);
}

export class LogFileError extends Error {}

/**
 * Adds winston's file transport for the `log:` block: JSON lines, rotated when the file reaches
 * `max_size`, at most `max_files` files kept (the newest always under the configured name). The
 * directory must exist and be writable; otherwise a LogFileError says which and nothing is added.
 */
export function addLogFile(logger: Logger, settings: LogFileSettings): string {
  const base = winstonOf.get(logger);
  const role = roleOf.get(logger);
  if (!base || !role) throw new Error("addLogFile needs a logger made by createLogger");
  const filename = logFileFor(settings.file, role);
  checkWritable(filename);
  base.add(
    new winston.transports.File({
      filename,
      maxsize: settings.maxSizeBytes,
      maxFiles: settings.maxFiles,
      tailable: true,
      format: winston.format.json(),
    }),
  );
  return filename;
}

function checkWritable(filename: string): void {
  const directory = dirname(filename);
  const fix = `create it and let the svc user write there, or remove the "log" block`;
  let isDirectory: boolean;
  try {
    isDirectory = statSync(directory).isDirectory();
  } catch {
    throw new LogFileError(`daemon.yaml: "log.file": the directory ${directory} does not exist - ${fix}`);
  }
  if (!isDirectory)
    throw new LogFileError(`daemon.yaml: "log.file": ${directory} is not a directory - ${fix}`);
  for (const path of [directory, filename]) {
    try {
      accessSync(path, constants.W_OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // a log file that does not exist yet is created in the (writable) directory
      if (code === "ENOENT" && path === filename) continue;
      throw new LogFileError(`daemon.yaml: "log.file": ${path} is not writable (${code}) - ${fix}`);
    }
  }
}
