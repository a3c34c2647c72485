/**
 * The one place svc decides what a secret looks like, for its log lines (shared/logger.ts) and for
 * the text it stores of a run (worker/run/artifacts.ts): a secret is replaced by REDACTED.
 *
 * Two kinds of rule: values svc knows (a run's credentials and tokens, given to a Redactor), and
 * shapes of text that carry a credential whatever its value (a credential-named key, an
 * `Authorization` header, a bearer token, a `*_TOKEN=` assignment). A value svc does not know, in a
 * shape these rules do not name, is not found: redaction narrows a leak, it is not a guarantee.
 */

export const REDACTED = "[redacted]";

/** Keys whose value is a credential wherever it appears: a log line's field, a JSON key in a transcript. */
const CREDENTIAL_KEYS = [
  "authorization",
  "secret",
  "secrets",
  "token",
  "tokens",
  "password",
  "signature",
  "x-hub-signature-256",
  "linear-signature",
  "cookie",
  "api_key",
  "apikey",
];
/**
 * Keys a log line never carries, though they are no credential: a request's payload or body holds
 * whatever its sender put there. A stored artifact keeps them (a review's `body` is the run's output).
 */
const CONTENT_KEYS = ["payload", "body"];

/** The keys whose values a log line masks, searched at any depth of its fields. */
export const LOG_SECRET_KEYS = new RegExp(`^(${[...CREDENTIAL_KEYS, ...CONTENT_KEYS].join("|")})$`, "i");

/**
 * A value shorter than this is not looked for by value: it would blank ordinary words of a
 * transcript. No credential svc issues or a provider hands out is this short.
 */
export const MIN_SECRET_LENGTH = 8;

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

const KEY_ALTERNATION = CREDENTIAL_KEYS.map(escapeRegExp).join("|");

/**
 * The shapes of text that carry a credential, each with what it becomes. Named groups only, so
 * they combine into one expression with the known values (one pass over a text).
 */
const SHAPES: { pattern: string; replace: (groups: Record<string, string | undefined>) => string }[] = [
  {
    // `"token": "…"`, also once escaped inside a JSON string (`\"token\": \"…\"`, as agent CLIs'
    // event streams carry a tool's output): the string value goes, the key stays
    pattern: `(?<q>\\\\?")(?<key>${KEY_ALTERNATION})\\k<q>(?<sep>\\s*:\\s*)\\k<q>(?:\\\\.|[^"\\\\\\n])*?\\k<q>`,
    replace: (g) => `${g.q}${g.key}${g.q}${g.sep}${g.q}${REDACTED}${g.q}`,
  },
  {
    // an `Authorization:` header line (curl -v, an HTTP dump), whatever its scheme
    pattern: `(?<header>authorization\\s*[:=]\\s*(?:(?:bearer|basic|token)\\s+)?)[^\\s"',;]+`,
    replace: (g) => `${g.header}${REDACTED}`,
  },
  {
    // a bearer token anywhere else
    pattern: `(?<bearer>\\bbearer\\s+)[A-Za-z0-9._~+/=-]{8,}`,
    replace: (g) => `${g.bearer}${REDACTED}`,
  },
  {
    // `GH_TOKEN=…`, `OPENAI_API_KEY=…` as `env` prints them, `?token=…` in a URL
    pattern: `(?<assign>\\b[A-Za-z0-9_]*(?:token|secret|password|passwd|api_key|apikey|access_key|private_key)=)[^\\s"'&;]+`,
    replace: (g) => `${g.assign}${REDACTED}`,
  },
];

/**
 * Every shape in one expression, compiled once for the process: a run's Redactor is built for each
 * run, and a new expression would be compiled (and tiered up to machine code) again for every run.
 * Safe to share: it is only used synchronously, from a given lastIndex.
 */
const SHAPES_PATTERN = new RegExp(
  SHAPES.map((shape, index) => `(?<shape${index}>${shape.pattern})`).join("|"),
  "gi",
);

/** One match to replace: where it starts and ends, and what it becomes. */
interface Hit {
  start: number;
  end: number;
  text: string;
}

/**
 * Replaces known secret values and credential-shaped text by REDACTED, in one pass from left to
 * right: at each place the earliest match wins, a known value before a shape that starts at the same
 * place. Built once for a set of values (a run's), then applied to every text stored of that run.
 */
export class Redactor {
  /** the values looked for, longest first: a value that contains another is replaced whole */
  readonly #known: string[];
  /** the values, as many as were long enough to look for */
  readonly size: number;

  constructor(values: Iterable<string> = []) {
    const wanted = new Set<string>();
    for (const value of values) {
      if (value.length < MIN_SECRET_LENGTH) continue;
      wanted.add(value);
      // a value with a quote, a backslash or a control character appears escaped in JSON text
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value) wanted.add(escaped);
    }
    this.size = wanted.size;
    this.#known = [...wanted].sort((a, b) => b.length - a.length);
  }

  /** `text` with every known value and credential-shaped run of text replaced. */
  redact(text: string): string {
    return this.redactPrefix(text, text.length).text;
  }

  /**
   * For a text read in pieces: the matches that begin before `end` are replaced (each whole, though
   * it may run past `end`); the rest is left for the next piece. Returns the redacted text up to
   * `consumed` (at least `end`), and how many matches were replaced.
   */
  redactPrefix(text: string, end: number): { text: string; consumed: number; replaced: number } {
    let out = "";
    let from = 0;
    let replaced = 0;
    const scan: Scan = { next: this.#known.map((value) => text.indexOf(value)), shape: undefined };
    for (let hit = this.#nextHit(text, from, scan); hit && hit.start < end; ) {
      out += text.slice(from, hit.start) + hit.text;
      from = hit.end;
      replaced++;
      hit = this.#nextHit(text, from, scan);
    }
    const consumed = Math.max(end, from);
    return { text: out + text.slice(from, consumed), consumed, replaced };
  }

  /** The earliest match at or after `from`: a known value's (longest first), else a shape's. */
  #nextHit(text: string, from: number, scan: Scan): Hit | undefined {
    let known: Hit | undefined;
    this.#known.forEach((value, index) => {
      if (scan.next[index]! !== -1 && scan.next[index]! < from) scan.next[index] = text.indexOf(value, from);
      const at = scan.next[index]!;
      if (at !== -1 && (!known || at < known.start))
        known = { start: at, end: at + value.length, text: REDACTED };
    });
    // the shape found last is still the next one unless a known value's replacement passed its start
    if (scan.shape === undefined || (scan.shape !== null && scan.shape.start < from)) {
      SHAPES_PATTERN.lastIndex = from;
      const match = SHAPES_PATTERN.exec(text);
      scan.shape = match
        ? { start: match.index, end: match.index + match[0].length, text: replacement(match.groups ?? {}) }
        : null;
    }
    const shape = scan.shape;
    return shape && (!known || shape.start < known.start) ? shape : known;
  }
}

/** Where one pass over a text stands: each known value's next place, and the next shape's match (null: none left). */
interface Scan {
  next: number[];
  shape: Hit | null | undefined;
}

function replacement(groups: Record<string, string | undefined>): string {
  const index = SHAPES.findIndex((_, i) => groups[`shape${i}`] !== undefined);
  return SHAPES[index]!.replace(groups);
}

/**
 * `value` with the values of secret-bearing keys (LOG_SECRET_KEYS) masked, searched down to depth 7.
 * An Error keeps its name and message only (its own fields may carry a request).
 */
export function maskSecretKeys(value: unknown, depth: number): unknown {
  if (depth > 7 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => maskSecretKeys(item, depth + 1));
  if (value instanceof Error) return { name: value.name, message: value.message };
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // an undefined field is left out, as JSON leaves it out
    if (inner !== undefined)
      out[key] = LOG_SECRET_KEYS.test(key) ? REDACTED : maskSecretKeys(inner, depth + 1);
  }
  return out;
}
