/**
 * One JSON object per line with a stable `event` field (pretty on a TTY or with SVC_LOG_FORMAT=pretty).
 * Secrets never reach a log line: known secret-bearing keys are masked wherever they appear, and
 * callers log ids and names, never payloads, headers or tokens.
 *
 * Written by hand rather than with a logging library: a line is built once and written once, which
 * is all svc needs, and the ingress writes one per request (winston's format and transport chain
 * cost it about 100 µs of CPU per line, measured by bench/ingress.bench.ts).
 */
export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
}

/** npm's levels, as SVC_LOG_LEVEL has always accepted them; a line is written at its level or below. */
const LEVELS: Record<string, number> = {
  error: 0,
  warn: 1,
  info: 2,
  http: 3,
  verbose: 4,
  debug: 5,
  silly: 6,
};

const SECRET_KEYS =
  /^(authorization|secret|secrets|token|tokens|password|signature|x-hub-signature-256|linear-signature|cookie|api_key|apikey|payload|body)$/i;
const MASK = "[redacted]";

/**
 * A log line's fields with secret-bearing keys masked. The fields object itself is depth 0, so each
 * field's value is searched 6 levels deep.
 */
function redact(value: unknown, depth = 0): unknown {
  if (depth > 7 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  if (value instanceof Error) return { name: value.name, message: value.message };
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // an undefined field is left out, as JSON leaves it out
    if (inner !== undefined) out[key] = SECRET_KEYS.test(key) ? MASK : redact(inner, depth + 1);
  }
  return out;
}

export interface LoggerOptions {
  /** the process role, e.g. `ingress` or `worker` */
  role: string;
  level?: string;
  format?: "json" | "pretty";
  /** defaults to stdout */
  stream?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const levelName = options.level ?? process.env.SVC_LOG_LEVEL ?? "info";
  const max = LEVELS[levelName] ?? LEVELS.info!;
  const pretty =
    (options.format ??
      (process.env.SVC_LOG_FORMAT as "json" | "pretty" | undefined) ??
      (process.stdout.isTTY ? "pretty" : "json")) === "pretty";
  const stream = options.stream ?? process.stdout;
  const { role } = options;
  const write = (level: string, message: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[level]! > max) return;
    const timestamp = new Date().toISOString();
    const rest = redact(fields) as Record<string, unknown>;
    if (!pretty) {
      stream.write(`${JSON.stringify({ level, message, role, ...rest, timestamp })}\n`);
      return;
    }
    const { event, ...extra } = rest;
    const tail = Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : "";
    stream.write(`${timestamp} ${role} ${level} ${event ?? ""} ${message}${tail}\n`);
  };
  return {
    error: (message, fields) => write("error", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    info: (message, fields) => write("info", message, fields),
    debug: (message, fields) => write("debug", message, fields),
  };
}
