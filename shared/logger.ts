import winston from "winston";

/**
 * One JSON object per line with a stable `event` field (pretty on a TTY or with SVC_LOG_FORMAT=pretty).
 * Secrets never reach a log line: known secret-bearing keys are masked wherever they appear, and
 * callers log ids and names, never payloads, headers or tokens.
 */
export type Logger = winston.Logger;

const SECRET_KEYS =
  /^(authorization|secret|secrets|token|tokens|password|signature|x-hub-signature-256|linear-signature|cookie|api_key|apikey|payload|body)$/i;
const MASK = "[redacted]";

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  if (value instanceof Error) return { name: value.name, message: value.message };
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = SECRET_KEYS.test(key) ? MASK : redact(inner, depth + 1);
  }
  return out;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === "level" || key === "message" || key === "event") continue;
    (info as Record<string, unknown>)[key] = SECRET_KEYS.test(key) ? MASK : redact(info[key]);
  }
  return info;
});

export interface LoggerOptions {
  /** the process role, e.g. `ingress` or `worker` */
  role: string;
  level?: string;
  format?: "json" | "pretty";
  /** defaults to stdout */
  stream?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const level = options.level ?? process.env.SVC_LOG_LEVEL ?? "info";
  const formatName =
    options.format ??
    (process.env.SVC_LOG_FORMAT as "json" | "pretty" | undefined) ??
    (process.stdout.isTTY ? "pretty" : "json");
  const base = [winston.format.timestamp(), redactFormat()];
  const format =
    formatName === "pretty"
      ? winston.format.combine(
          ...base,
          winston.format.printf((info) => {
            const { timestamp, level: lvl, event, message, role, ...rest } = info as Record<string, unknown>;
            const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : "";
            return `${timestamp} ${role} ${lvl} ${event ?? ""} ${message ?? ""}${extra}`;
          }),
        )
      : winston.format.combine(...base, winston.format.json());
  const transport = options.stream
    ? new winston.transports.Stream({ stream: options.stream })
    : new winston.transports.Console();
  return winston.createLogger({
    level,
    format,
    defaultMeta: { role: options.role },
    transports: [transport],
  });
}
