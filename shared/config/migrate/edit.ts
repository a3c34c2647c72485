import { type Document, isMap, isScalar, isSeq, type Node, type Pair, type YAMLMap } from "yaml";

/** Small operations on yaml Documents that keep the comments and the order around what they touch. */

export const TODO_MARK = "TODO(svc config migrate):";

export type Path = readonly (string | number)[];

/** The mapping at `path`, or undefined when there is none. */
export function mapAt(doc: Document, path: Path): YAMLMap | undefined {
  const node = path.length === 0 ? doc.contents : doc.getIn(path, true);
  return isMap(node) ? (node as YAMLMap) : undefined;
}

export function pairOf(map: YAMLMap | undefined, key: string): Pair | undefined {
  return map?.items.find((item) => isScalar(item.key) && String(item.key.value) === key) as Pair | undefined;
}

/** The plain value of a pair (a mapping becomes an object, a list an array). */
export function plainValue(pair: Pair | undefined): unknown {
  const value = pair?.value as Node | null | undefined;
  if (value === null || value === undefined) return undefined;
  return typeof (value as { toJSON?: unknown }).toJSON === "function"
    ? (value as unknown as { toJSON(): unknown }).toJSON()
    : value;
}

export function has(map: YAMLMap | undefined, key: string): boolean {
  return pairOf(map, key) !== undefined;
}

/** Renames a key where it stands; false when the new name is taken. */
export function renameKey(map: YAMLMap, from: string, to: string): boolean {
  const pair = pairOf(map, from);
  if (!pair || has(map, to) || !isScalar(pair.key)) return false;
  pair.key.value = to;
  return true;
}

/**
 * Puts `entries` where `key` stood, in order; the comment above the old key stays above the first
 * new one. With no entries the key is deleted and its comment moves to the key that follows.
 */
export function replaceKey(doc: Document, map: YAMLMap, key: string, entries: [string, unknown][]): void {
  const index = map.items.findIndex((item) => isScalar(item.key) && String(item.key.value) === key);
  if (index < 0) return;
  const old = map.items[index]!;
  const pairs = entries.map(([name, value]) => compact(doc.createPair(name, value)));
  map.items.splice(index, 1, ...pairs);
  const carrier = pairs[0] ?? map.items[index];
  if (carrier) moveComments(old, carrier);
}

/** A new list of plain values is written `[a, b]`, as the configuration examples write lists. */
function compact(pair: Pair): Pair {
  const value = pair.value as Node | null;
  if (isSeq(value) && value.items.every((item) => isScalar(item))) value.flow = true;
  return pair;
}

/**
 * Puts the comments of `from` (the line above its key, the one after its value) on `to`: the
 * comment above stays above, the trailing one follows a scalar or flow value, else goes above too.
 */
export function moveComments(from: Pair, to: Pair): void {
  const above = isScalar(from.key) ? from.key.commentBefore : undefined;
  const trailing = (from.value as { comment?: string } | null)?.comment;
  const key = isScalar(to.key) ? to.key : undefined;
  const value = to.value as (Node & { flow?: boolean; comment?: string }) | null;
  const lines: string[] = [];
  if (above) lines.push(above);
  if (trailing && value && (isScalar(value) || value.flow) && !value.comment) value.comment = trailing;
  else if (trailing) lines.push(trailing);
  if (lines.length && key) key.commentBefore = [...lines, key.commentBefore].filter(Boolean).join("\n");
}

export function deleteKey(doc: Document, map: YAMLMap, key: string): void {
  replaceKey(doc, map, key, []);
}

/** Sets `key` at the end of the mapping at `path`, creating the mappings on the way. */
export function setAtEnd(doc: Document, path: Path, key: string, value: unknown): Pair {
  if (path.length > 0 && !mapAt(doc, path)) doc.setIn(path, doc.createNode({}));
  const map = path.length === 0 ? (doc.contents as YAMLMap) : mapAt(doc, path)!;
  if (has(map, key)) map.set(key, doc.createNode(value));
  else map.items.push(compact(doc.createPair(key, value)));
  return pairOf(map, key)!;
}

/** Removes an empty mapping at `path` (left behind when its last key moved elsewhere). */
export function dropIfEmpty(doc: Document, path: Path): void {
  const map = mapAt(doc, path);
  if (!map || map.items.length > 0 || path.length === 0) return;
  const parent = mapAt(doc, path.slice(0, -1));
  if (parent) deleteKey(doc, parent, String(path[path.length - 1]));
}

/**
 * Writes a to-do comment above `key` of `map`. Returns false when the same to-do is already there,
 * so a second run leaves the file alone.
 */
export function markTodo(map: YAMLMap, key: string, text: string): boolean {
  const pair = pairOf(map, key);
  if (!pair || !isScalar(pair.key)) return false;
  const line = ` ${TODO_MARK} ${text}`;
  const before = pair.key.commentBefore ?? "";
  // parsed again, a comment above a mapping's first key belongs to the mapping itself
  const written = [before, map.items[0] === pair ? (map.commentBefore ?? "") : ""].join("\n");
  if (written.split("\n").includes(line)) return false;
  pair.key.commentBefore = before ? `${before}\n${line}` : line;
  return true;
}

export function isList(node: unknown): boolean {
  return isSeq(node);
}
