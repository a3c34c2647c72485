import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Document, parseDocument } from "yaml";
import { splitFrontmatter } from "../source.ts";

/** One rewrite a step made, for the progress listing. */
export interface MigrationChange {
  release: string;
  file: string;
  text: string;
}

/** A rewrite that cannot be made mechanically: a comment in the file and a line of the summary. */
export interface MigrationTodo {
  file: string;
  /** the line of the to-do comment; absent for a to-do about a whole file (two files to merge) */
  line?: number;
  text: string;
}

interface Entry {
  /** the text as read (undefined for a file a step created) */
  original?: string;
  /** where the file was read from, when a step renamed it */
  from?: string;
  doc?: Document;
  /** true once the file was found not to parse (reported once, never rewritten) */
  broken?: boolean;
  /** frontmatter files: the Markdown after the closing `---` */
  body?: string;
  changed: boolean;
}

/** the directories `svc config migrate` reads; state kept in the configuration directory is never touched */
const YAML_FILES = ["daemon.yaml", "members.yaml"];

/**
 * The configuration files of a directory, parsed with the yaml `Document` API so that a rewrite keeps
 * comments and key order; steps edit documents in place and the tree renders only what they changed.
 */
export class ConfigTree {
  readonly dir: string;
  readonly changes: MigrationChange[] = [];
  readonly todos: MigrationTodo[] = [];
  readonly #files = new Map<string, Entry>();
  readonly #read = new Map<string, string>();

  private constructor(dir: string) {
    this.dir = dir;
  }

  static async read(dir: string): Promise<ConfigTree> {
    const tree = new ConfigTree(dir);
    const names = [...YAML_FILES];
    for (const file of await listFiles(dir, "pipelines")) if (file.endsWith(".yaml")) names.push(file);
    for (const sub of ["policies", "protocols"])
      for (const file of await listFiles(dir, sub)) if (file.endsWith(".md")) names.push(file);
    for (const sub of ["agents", "skills"]) {
      for (const owner of await listDirs(dir, sub)) {
        for (const file of await listFiles(dir, `${sub}/${owner}`))
          if (file.endsWith(".md")) names.push(file);
      }
    }
    for (const name of names) {
      const text = await readFile(join(dir, name), "utf8").catch(() => undefined);
      if (text === undefined) continue;
      tree.#read.set(name, text);
      tree.#files.set(name, { original: text, changed: false });
    }
    return tree;
  }

  has(file: string): boolean {
    return this.#files.has(file);
  }

  /** Files present now whose path starts with `prefix`, in name order. */
  list(prefix: string): string[] {
    return [...this.#files.keys()].filter((file) => file.startsWith(prefix)).sort();
  }

  /**
   * The YAML document of a `.yaml` file, or of a Markdown file's frontmatter. Undefined when the file
   * is absent or does not parse: `svc config validate` reports those, and a migration must not guess.
   */
  doc(file: string): Document | undefined {
    const entry = this.#files.get(file);
    if (!entry || entry.broken) return undefined;
    if (entry.doc) return entry.doc;
    const text = entry.original ?? "";
    let yaml = text;
    if (file.endsWith(".md")) {
      const split = splitFrontmatter(text);
      if (!split) return this.#broken(entry, file, "has no frontmatter block");
      yaml = split.yaml;
      entry.body = split.body;
    }
    const doc = parseDocument(yaml, { uniqueKeys: true });
    if (doc.errors.length > 0) return this.#broken(entry, file, "is not valid YAML");
    entry.doc = doc;
    return doc;
  }

  #broken(entry: Entry, file: string, why: string): undefined {
    entry.broken = true;
    this.fileTodo(
      file,
      `${why}, so it was not migrated - fix it (svc config validate shows where) and run svc config migrate again`,
    );
    return undefined;
  }

  /** Marks a file as rewritten by `release` and records the progress line. */
  changed(release: string, file: string, text: string): void {
    const entry = this.#files.get(file);
    if (entry) entry.changed = true;
    this.changes.push({ release, file, text });
  }

  /** A to-do no comment can carry (about a whole file); comment to-dos are read back from the files. */
  fileTodo(file: string, text: string): void {
    this.todos.push({ file, text });
  }

  /** Moves a file; refuses (false) when the destination exists. */
  rename(release: string, from: string, to: string): boolean {
    const entry = this.#files.get(from);
    if (!entry || this.#files.has(to)) return false;
    this.#files.delete(from);
    this.#files.set(to, { ...entry, from: entry.from ?? from, changed: true });
    this.changes.push({ release, file: to, text: `renamed from ${from}` });
    return true;
  }

  /** The files as they are after the steps: path → text, and the paths read that no longer exist. */
  render(): { texts: Map<string, string>; removed: string[]; moves: Map<string, string> } {
    const texts = new Map<string, string>();
    const moves = new Map<string, string>();
    for (const [file, entry] of this.#files) {
      if (entry.from) moves.set(file, entry.from);
      if (!entry.changed || !entry.doc) {
        texts.set(file, entry.original ?? "");
        continue;
      }
      const yaml = entry.doc.toString({ lineWidth: 0, flowCollectionPadding: false });
      texts.set(file, file.endsWith(".md") ? `---\n${yaml}---\n${entry.body ?? ""}` : yaml);
    }
    const removed = [...this.#read.keys()].filter((file) => !this.#files.has(file));
    return { texts, removed, moves };
  }

  /** The text read from disk, for the diff and the "changed" test. */
  original(file: string): string | undefined {
    return this.#read.get(file);
  }
}

async function listFiles(dir: string, sub: string): Promise<string[]> {
  const entries = await readdir(join(dir, sub), { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => `${sub}/${entry.name}`);
}

async function listDirs(dir: string, sub: string): Promise<string[]> {
  const entries = await readdir(join(dir, sub), { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
}
