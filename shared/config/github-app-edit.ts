import { isDeepStrictEqual } from "node:util";
import { type Document, isMap, isScalar, type Node, type Pair, parseDocument, type YAMLMap } from "yaml";
import { APP_KEY_REF, GITHUB_SOURCE, WEBHOOK_SECRET_REF } from "../codehost/github-manifest.ts";
import { mapAt, pairOf } from "./migrate/edit.ts";

/**
 * `svc setup github`'s edit of daemon.yaml: `codehost.app: { id, secret_ref }` and
 * `webhooks.sources.github: { verify: codehost, secret_ref: webhook/github }`. The new lines are
 * spliced into the text where the mappings are, so every other line stays as written (aligned
 * comments included); only a mapping written in flow style (`{ ... }`) makes the whole document be
 * re-rendered through the yaml Document API, which keeps its comments but not their alignment. A
 * file that already names an App, a code-host token or a `github` source is refused unless
 * `force`, which replaces them.
 */
export type GithubAppEdit =
  | { ok: true; apply(app: { id: number; slug: string }): string }
  | { ok: false; message: string };

type Plain = string | number | { [key: string]: Plain };
interface Splice {
  at: number;
  end: number;
  text: string;
  /** whole lines: a newline goes first when the text before does not end one (no final newline) */
  lines?: boolean;
}

const TOKEN_KEYS = ["token", "token_ref"];

export function planGithubAppEdit(text: string, options: { file: string; force: boolean }): GithubAppEdit {
  const { file, force } = options;
  const refuse = (message: string): GithubAppEdit => ({ ok: false, message: `${file}: ${message}` });
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0)
    return refuse(
      "is not valid YAML, so svc setup github does not edit it - run svc config validate to see where",
    );
  if (doc.contents !== null && !isMap(doc.contents))
    return refuse("is not a mapping of keys - fix it (svc config validate), then run svc setup github again");
  for (const path of [["codehost"], ["webhooks"], ["webhooks", "sources"]]) {
    const node = doc.getIn(path, true);
    if (!isNull(node) && !isMap(node))
      return refuse(`"${path.join(".")}" is not a mapping - fix it, then run svc setup github again`);
  }
  const codehost = mapAt(doc, ["codehost"]);
  if (plain(pairOf(codehost, "kind")?.value) === "gitlab")
    return refuse(
      '"codehost.kind" is gitlab, and GitHub Apps are GitHub\'s - svc setup github is for a GitHub code host',
    );
  const app = pairOf(codehost, "app");
  if (app && !isNull(app.value) && !force) {
    const id = plain(mapAt(doc, ["codehost", "app"])?.get("id", true));
    return refuse(
      `"codehost.app" is already set${id !== undefined ? ` (id ${String(id)})` : ""}; svc setup github does not replace it - pass --force to replace it with the new App, or remove it first`,
    );
  }
  const token = TOKEN_KEYS.find((key) => {
    const pair = pairOf(codehost, key);
    return pair !== undefined && !isNull(pair.value);
  });
  if (token && !force)
    return refuse(
      `"codehost.${token}" is set, and codehost takes a token or an app, not both - pass --force to replace the token with the new App, or remove it first`,
    );
  const source = pairOf(mapAt(doc, ["webhooks", "sources"]), GITHUB_SOURCE);
  if (source && !isNull(source.value) && !force)
    return refuse(
      `"webhooks.sources.${GITHUB_SOURCE}" is already set; svc setup github does not replace it - pass --force to replace it, or remove it first`,
    );

  return {
    ok: true,
    apply({ id, slug }) {
      const appValue = { id, secret_ref: APP_KEY_REF };
      const sourceValue = { verify: "codehost", secret_ref: WEBHOOK_SECRET_REF };
      const comment = `the GitHub App ${slug.replace(/[^A-Za-z0-9_.-]/g, "")}, created by svc setup github`;
      const expected = expectedData(doc, appValue, sourceValue);
      const spliced = splice(text, parseDocument(text, { uniqueKeys: true }), appValue, sourceValue, comment);
      if (spliced !== undefined && holds(spliced, expected)) return spliced;
      const rendered = rerender(parseDocument(text, { uniqueKeys: true }), appValue, sourceValue, comment);
      if (holds(rendered, expected)) return rendered;
      throw new Error(
        `${file}: svc setup github could not write codehost.app and webhooks.sources.github into it`,
      );
    },
  };
}

/** The data the edited file must hold: the old data, with the App and the source set and no token. */
function expectedData(doc: Document, app: Plain, source: Plain): unknown {
  const data = (doc.toJSON() ?? {}) as Record<string, unknown>;
  const codehost = { ...((data.codehost as Record<string, unknown> | null) ?? {}) };
  for (const key of TOKEN_KEYS) delete codehost[key];
  codehost.app = app;
  const webhooks = { ...((data.webhooks as Record<string, unknown> | null) ?? {}) };
  webhooks.sources = {
    ...((webhooks.sources as Record<string, unknown> | null) ?? {}),
    [GITHUB_SOURCE]: source,
  };
  return { ...data, codehost, webhooks };
}

function holds(text: string, expected: unknown): boolean {
  const doc = parseDocument(text, { uniqueKeys: true });
  return doc.errors.length === 0 && isDeepStrictEqual(doc.toJSON(), expected);
}

/** The edit as splices of the text; undefined when a mapping on the way is not in block style. */
function splice(text: string, doc: Document, app: Plain, source: Plain, comment: string): string | undefined {
  const splices: Splice[] = [];
  const root = doc.contents === null ? null : (doc.contents as YAMLMap);
  if (root?.flow) return undefined;
  const codehost = pairOf(root ?? undefined, "codehost");
  if (codehost && isMap(codehost.value)) {
    const map = codehost.value as YAMLMap;
    for (const key of TOKEN_KEYS) {
      const pair = pairOf(map, key);
      if (!pair) continue;
      const removal = removePair(text, map, pair);
      if (!removal) return undefined;
      splices.push(removal);
    }
  }
  const setApp = setIn(text, root, ["codehost", "app"], app, comment);
  const setSource = setIn(text, root, ["webhooks", "sources", GITHUB_SOURCE], source);
  if (!setApp || !setSource) return undefined;
  splices.push(setApp, setSource);
  return applySplices(text, splices);
}

/** Sets `path` (a chain of block mappings, created as needed) to `value`, as a splice. */
function setIn(
  text: string,
  root: YAMLMap | null,
  path: string[],
  value: Plain,
  comment?: string,
): Splice | undefined {
  if (root === null) {
    const at = text.length;
    return { at, end: at, lines: true, text: block(nest(path, value), 0, 2, comment, path.length) };
  }
  let map = root;
  for (let depth = 0; depth < path.length; depth++) {
    const key = path[depth]!;
    const rest = nest(path.slice(depth + 1), value);
    const pair = pairOf(map, key);
    const step = indentStep(text, map);
    const indent = column(text, map.range![0]);
    const last = depth === path.length - 1;
    const remaining = path.length - depth - 1;
    if (!pair) {
      // a new key at the end of the mapping's own lines: trailing comments stay below it
      const at = map.range![1];
      const entry = { [key]: rest } as Plain;
      return { at, end: at, lines: true, text: block(entry, indent, step, comment, path.length - depth) };
    }
    if (!isScalar(pair.key) || !startsLine(text, pair.key.range![0])) return undefined;
    const node = pair.value as Node | null;
    if (isMap(node) && !last) {
      // an empty `{}` is written over in place; a flow mapping with keys is left to rerender()
      if (node.flow && node.items.length === 0)
        return { at: node.range![0], end: node.range![1], text: flow(rest) };
      if (node.flow) return undefined;
      map = node;
      continue;
    }
    if (isNull(node)) {
      // `key:` with nothing after it (or only a comment): the value goes on the lines below
      const at = lineEnd(text, pair.key.range![1]);
      return { at, end: at, lines: true, text: block(rest, indent + step, step, comment, remaining) };
    }
    if (!last) return undefined;
    if (isMap(node) && !node.flow) {
      // the key's own line (and its comment) stays; the lines of its old value are replaced
      const at = lineStart(text, node.range![0]);
      return { at, end: node.range![1], text: block(rest, column(text, node.range![0]), step) };
    }
    if (isScalar(node) || isMap(node)) {
      // a value on the key's line: replaced in place, in flow style, before any comment there
      return { at: node.range![0], end: node.range![1], text: flow(rest) };
    }
    return undefined;
  }
  return undefined;
}

/** The lines of `pair` (its key starting a line of a block mapping), removed. */
function removePair(text: string, map: YAMLMap, pair: Pair): Splice | undefined {
  if (map.flow || !isScalar(pair.key) || !startsLine(text, pair.key.range![0])) return undefined;
  const value = pair.value as Node | null;
  const end = value?.range ? value.range[1] : pair.key.range![1];
  return { at: lineStart(text, pair.key.range![0]), end: lineEnd(text, end), text: "" };
}

function applySplices(text: string, splices: Splice[]): string | undefined {
  const ordered = splices.map((entry, index) => ({ ...entry, index }));
  ordered.sort((a, b) => a.at - b.at || a.index - b.index);
  let out = "";
  let cursor = 0;
  for (const entry of ordered) {
    if (entry.at < cursor) return undefined;
    out += text.slice(cursor, entry.at);
    if (entry.lines && out !== "" && !out.endsWith("\n")) out += "\n";
    out += entry.text;
    cursor = entry.end;
  }
  return out + text.slice(cursor);
}

/** The whole document rendered again with the App and the source set (flow-style mappings). */
function rerender(doc: Document, app: Plain, source: Plain, comment: string): string {
  if (doc.contents === null) doc.contents = doc.createNode({}) as unknown as typeof doc.contents;
  const root = doc.contents as unknown as YAMLMap;
  const codehost = ensureMap(doc, root, "codehost");
  for (const key of TOKEN_KEYS) codehost.delete(key);
  const existing = pairOf(codehost, "app");
  if (existing) existing.value = doc.createNode(app);
  else {
    const added = doc.createPair("app", app);
    if (isScalar(added.key)) added.key.commentBefore = ` ${comment}`;
    codehost.items.push(added);
  }
  const sources = ensureMap(doc, ensureMap(doc, root, "webhooks"), "sources");
  const github = pairOf(sources, GITHUB_SOURCE);
  if (github) github.value = doc.createNode(source);
  else sources.items.push(doc.createPair(GITHUB_SOURCE, source));
  return doc.toString({ lineWidth: 0 });
}

function ensureMap(doc: Document, parent: YAMLMap, key: string): YAMLMap {
  const pair = pairOf(parent, key);
  if (pair && isMap(pair.value)) return pair.value as YAMLMap;
  const map = doc.createNode({}) as YAMLMap;
  if (pair) pair.value = map;
  else parent.items.push(doc.createPair(key, map));
  return map;
}

function nest(path: string[], value: Plain): Plain {
  return path.reduceRight<Plain>((inner, key) => ({ [key]: inner }), value);
}

/**
 * `value` (a mapping) as block lines at `indent`; `comment` goes above the key `commentDepth - 1`
 * levels down (the key it is about), when given.
 */
function block(value: Plain, indent: number, step: number, comment?: string, commentDepth = 1): string {
  let out = "";
  for (const [key, inner] of Object.entries(value as Record<string, Plain>)) {
    const pad = " ".repeat(indent);
    if (comment && commentDepth === 1) out += `${pad}# ${comment}\n`;
    if (typeof inner === "object") {
      out += `${pad}${key}:\n${block(inner, indent + step, step, comment, commentDepth - 1)}`;
    } else out += `${pad}${key}: ${String(inner)}\n`;
  }
  return out;
}

function flow(value: Plain): string {
  if (typeof value !== "object") return String(value);
  return `{ ${Object.entries(value)
    .map(([key, inner]) => `${key}: ${flow(inner)}`)
    .join(", ")} }`;
}

/** The indentation a mapping's children use, from its first nested mapping; 2 when it has none. */
function indentStep(text: string, map: YAMLMap): number {
  const own = column(text, map.range![0]);
  for (const item of map.items) {
    const value = item.value as Node | null;
    if (isMap(value) && !value.flow && value.items.length > 0) {
      const step = column(text, value.range![0]) - own;
      if (step > 0) return step;
    }
  }
  return 2;
}

function lineStart(text: string, at: number): number {
  return text.lastIndexOf("\n", at - 1) + 1;
}

/** The offset after the newline ending the line that `at` is on (or just ended, at a line start). */
function lineEnd(text: string, at: number): number {
  if (at > 0 && text[at - 1] === "\n") return at;
  const newline = text.indexOf("\n", at);
  return newline < 0 ? text.length : newline + 1;
}

function column(text: string, at: number): number {
  return at - lineStart(text, at);
}

function startsLine(text: string, at: number): boolean {
  return /^[ ]*$/.test(text.slice(lineStart(text, at), at));
}

function plain(node: unknown): unknown {
  return isScalar(node) ? node.value : node;
}

function isNull(node: unknown): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}
