import { type Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { ConfigCode, DoctorCode } from "./codes.ts";
import type { ConfigProblem, Severity } from "./types.ts";

export type KeyPath = readonly (string | number)[];

/** `webhooks.sources.github.secret`, `setup[0].run`: the spelling operators see in every problem. */
export function formatPath(path: KeyPath): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out ? `.${segment}` : segment;
  }
  return out;
}

/**
 * One configuration file being validated: it owns the problems found in it and turns a key path
 * into the line and column YAML recorded, so every problem points into the file.
 */
export class ConfigFile {
  readonly file: string;
  readonly problems: ConfigProblem[];
  #doc: Document | undefined;
  #lines: LineCounter | undefined;
  #lineOffset = 0;

  readonly #label: string;

  /** `label` replaces `file` as the message prefix (the directory itself is reported by its path). */
  constructor(file: string, problems: ConfigProblem[], label: string = file) {
    this.file = file;
    this.problems = problems;
    this.#label = label;
  }

  attach(doc: Document, lines: LineCounter, lineOffset: number): void {
    this.#doc = doc;
    this.#lines = lines;
    this.#lineOffset = lineOffset;
  }

  /** Records a problem; `text` is the message after the `<file>: ` prefix every message carries. */
  report(path: KeyPath, code: ConfigCode | DoctorCode, text: string, severity: Severity = "error"): void {
    const problem: ConfigProblem = {
      file: this.file,
      path: formatPath(path),
      code,
      severity,
      message: `${this.#label}: ${text}`,
    };
    const position = this.position(path);
    if (position) {
      problem.line = position.line;
      problem.column = position.column;
    }
    this.problems.push(problem);
  }

  /** Records a problem at a byte offset of the parsed text (YAML syntax errors). */
  reportAtOffset(offset: number, code: ConfigCode, text: string): void {
    const problem: ConfigProblem = {
      file: this.file,
      path: "",
      code,
      severity: "error",
      message: `${this.#label}: ${text}`,
    };
    if (this.#lines) {
      const { line, col } = this.#lines.linePos(offset);
      problem.line = line + this.#lineOffset;
      problem.column = col;
    }
    this.problems.push(problem);
  }

  get errorCount(): number {
    let count = 0;
    for (const problem of this.problems)
      if (problem.file === this.file && problem.severity === "error") count++;
    return count;
  }

  /** The key's own position when the path exists, else that of its deepest existing ancestor. */
  position(path: KeyPath): { line: number; column: number } | undefined {
    if (!this.#doc || !this.#lines) return undefined;
    let node: unknown = this.#doc.contents;
    let offset: number | undefined = rangeStart(node);
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find(
          (item) => isScalar(item.key) && String(item.key.value) === String(segment),
        );
        if (!pair) break;
        offset = rangeStart(pair.key) ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        const item = node.items[segment];
        if (item === undefined) break;
        offset = rangeStart(item) ?? offset;
        node = item;
      } else {
        break;
      }
    }
    if (offset === undefined) return undefined;
    const { line, col } = this.#lines.linePos(offset);
    return { line: line + this.#lineOffset, column: col };
  }
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as Node | null | undefined)?.range;
  return Array.isArray(range) ? range[0] : undefined;
}

// an alias bomb is refused, not expanded: configuration never needs many aliases
const MAX_ALIASES = 100;

/**
 * Parses `text` as one YAML document. Syntax errors become problems with their position;
 * their messages never quote the source, so a secret on a broken line is not echoed.
 * Returns undefined when the document cannot be used.
 */
export function parseYaml(f: ConfigFile, text: string, lineOffset = 0): { data: unknown } | undefined {
  const lines = new LineCounter();
  let doc: Document;
  try {
    doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  } catch (error) {
    f.report([], "yaml_syntax", `is not valid YAML (${errorSummary(error)}) - fix the syntax`);
    return undefined;
  }
  f.attach(doc, lines, lineOffset);
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      f.reportAtOffset(
        error.pos[0],
        "yaml_syntax",
        `invalid YAML: ${errorSummary(error)} - fix the syntax here`,
      );
    }
    return undefined;
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    f.report([], "yaml_syntax", `cannot be read as YAML data (${errorSummary(error)}) - remove the aliases`);
    return undefined;
  }
  // every later step walks the data recursively: a self-containing alias (`a: &x [*x]`) or absurd
  // nesting would overflow the stack there, far from the file that caused it
  const shape = unusableShape(data);
  if (shape) {
    f.report([], "yaml_syntax", shape);
    return undefined;
  }
  return { data };
}

const MAX_NESTING = 64;

function unusableShape(data: unknown): string | undefined {
  const ancestors = new Set<object>();
  const visit = (node: unknown, depth: number): string | undefined => {
    if (node === null || typeof node !== "object") return undefined;
    if (ancestors.has(node))
      return "an alias refers to a node that contains it (a recursive alias) - remove the alias";
    if (depth > MAX_NESTING) return `nests deeper than ${MAX_NESTING} levels - flatten the data`;
    ancestors.add(node);
    const children = node instanceof Map ? [...node.values()] : Object.values(node);
    for (const child of children) {
      const problem = visit(child, depth + 1);
      if (problem) return problem;
    }
    ancestors.delete(node);
    return undefined;
  };
  return visit(data, 0);
}

function errorSummary(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // YAML messages name the construct, not the text; keep only the first line to be sure
  return (message.split("\n")[0] ?? "").slice(0, 200);
}

/** Splits `---\n<yaml>\n---\n<body>`; undefined when the text does not open with frontmatter. */
export function splitFrontmatter(text: string): { yaml: string; body: string } | undefined {
  const normalized = text.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  if (!normalized.startsWith("---\n")) return undefined;
  const rest = normalized.slice(4);
  const close = /^(?:---|\.\.\.)[ \t]*$/m.exec(rest);
  if (!close) return undefined;
  const yaml = rest.slice(0, close.index);
  const body = rest.slice(close.index + close[0].length).replace(/^\n/, "");
  return { yaml, body };
}
