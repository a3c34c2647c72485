import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * Heap snapshots of a drill child, taken through Node's `--heapsnapshot-signal` (the child is started
 * with `heapSnapshotEnv`), and the comparison of two of them: how many objects of each kind the heap
 * retains, so growth that follows the number of runs shows up by constructor name.
 */
export const SNAPSHOT_SIGNAL = "SIGUSR2";
/** Node's diagnostic report (`--report-on-signal`): V8's committed heap, external and malloced memory, libuv handles */
export const REPORT_SIGNAL = "SIGTTIN";

/** NODE_OPTIONS for a child whose heap may be snapshotted, and its diagnostic report written, into `dir`. */
export function heapSnapshotEnv(dir: string): Record<string, string> {
  return {
    NODE_OPTIONS: [
      `--heapsnapshot-signal=${SNAPSHOT_SIGNAL}`,
      `--diagnostic-dir=${dir}`,
      "--report-on-signal",
      `--report-signal=${REPORT_SIGNAL}`,
      `--report-directory=${dir}`,
    ].join(" "),
  };
}

async function filesOf(dir: string, pid: number, ending: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((name) => name.includes(`.${pid}.`) && name.endsWith(ending)).sort();
}

const snapshotsOf = (dir: string, pid: number) => filesOf(dir, pid, ".heapsnapshot");

/** Where a process's memory is, from its diagnostic report, in MiB; `handles` counts libuv handles by type. */
export interface MemoryReport {
  rss: number;
  v8Committed: number;
  v8Used: number;
  external: number;
  malloced: number;
  /** RSS that neither V8's committed heap nor external buffers account for: native allocations, code, stacks */
  outsideV8: number;
  /** /proc/<pid>/status: anonymous memory (heaps, malloc) and file-backed pages (the node binary, libraries) */
  rssAnon: number;
  rssFile: number;
  handles: Record<string, number>;
}

/** Signals the child for a diagnostic report and reads it once it is complete JSON. */
export async function takeMemoryReport(pid: number, dir: string, boundMs = 60_000): Promise<MemoryReport> {
  const before = new Set(await filesOf(dir, pid, ".json"));
  process.kill(pid, REPORT_SIGNAL);
  const deadline = Date.now() + boundMs;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const fresh = (await filesOf(dir, pid, ".json")).find((name) => !before.has(name));
    if (!fresh) continue;
    let report: {
      javascriptHeap: Record<string, number>;
      resourceUsage: { rss: number };
      libuv: { type: string }[];
    };
    try {
      report = JSON.parse(await readFile(join(dir, fresh), "utf8"));
    } catch {
      continue; // still being written
    }
    const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
    const heap = report.javascriptHeap;
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
    const handles: Record<string, number> = {};
    for (const handle of report.libuv) handles[handle.type] = (handles[handle.type] ?? 0) + 1;
    return {
      rss: mib(report.resourceUsage.rss),
      v8Committed: mib(heap.totalCommittedMemory ?? 0),
      v8Used: mib(heap.usedMemory ?? 0),
      external: mib(heap.externalMemory ?? 0),
      malloced: mib(heap.mallocedMemory ?? 0),
      outsideV8: mib(
        report.resourceUsage.rss - (heap.totalCommittedMemory ?? 0) - (heap.externalMemory ?? 0),
      ),
      rssAnon: mib(kib("RssAnon") * 1024),
      rssFile: mib(kib("RssFile") * 1024),
      handles,
    };
  }
  throw new Error(`process ${pid} wrote no diagnostic report into ${dir} within ${boundMs} ms`);
}

/**
 * Signals the child and waits (bounded) until its new snapshot file is complete: Node writes it
 * on the main thread, so the file is whole once its size stops changing and it ends the JSON object.
 */
export async function takeHeapSnapshot(pid: number, dir: string, boundMs = 120_000): Promise<string> {
  const before = new Set(await snapshotsOf(dir, pid));
  process.kill(pid, SNAPSHOT_SIGNAL);
  const deadline = Date.now() + boundMs;
  let lastSize = -1;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const fresh = (await snapshotsOf(dir, pid)).find((name) => !before.has(name));
    if (!fresh) continue;
    const path = join(dir, fresh);
    const size = (await stat(path)).size;
    if (size > 0 && size === lastSize) {
      const tail = (await readFile(path)).subarray(-16).toString("utf8").trim();
      if (tail.endsWith("}")) return path;
    }
    lastSize = size;
  }
  throw new Error(`process ${pid} wrote no complete heap snapshot into ${dir} within ${boundMs} ms`);
}

/** Retained objects per kind: `object:Foo`, `closure:bar`, `string`, `array`, … */
export type HeapCensus = Map<string, { count: number; bytes: number }>;

interface SnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** node kinds whose name is a constructor or function name worth grouping by */
const NAMED = new Set(["object", "closure", "regexp", "native"]);

export async function heapCensus(path: string): Promise<HeapCensus> {
  const file = JSON.parse(await readFile(path, "utf8")) as SnapshotFile;
  const fields = file.snapshot.meta.node_fields;
  const types = file.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const census: HeapCensus = new Map();
  for (let i = 0; i < file.nodes.length; i += width) {
    const type = types[file.nodes[i + typeAt]!] ?? "unknown";
    const key = NAMED.has(type) ? `${type}:${file.strings[file.nodes[i + nameAt]!]}` : type;
    const entry = census.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += file.nodes[i + sizeAt]!;
    census.set(key, entry);
  }
  return census;
}

export interface HeapGrowth {
  kind: string;
  countBefore: number;
  countAfter: number;
  bytesAfter: number;
  /** added objects of this kind per run completed between the two snapshots */
  perRun: number;
}

/** The kinds that grew most in count between two censuses, with their growth per completed run. */
export function heapGrowth(before: HeapCensus, after: HeapCensus, runs: number, top = 12): HeapGrowth[] {
  return [...after]
    .map(([kind, now]) => {
      const then = before.get(kind) ?? { count: 0, bytes: 0 };
      return {
        kind,
        countBefore: then.count,
        countAfter: now.count,
        bytesAfter: now.bytes,
        perRun: runs > 0 ? (now.count - then.count) / runs : 0,
      };
    })
    .sort((a, b) => b.countAfter - b.countBefore - (a.countAfter - a.countBefore))
    .slice(0, top);
}

export function totalBytes(census: HeapCensus): number {
  let bytes = 0;
  for (const entry of census.values()) bytes += entry.bytes;
  return bytes;
}
