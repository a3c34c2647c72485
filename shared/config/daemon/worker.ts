import { readWorkerMetricsPort } from "../metrics.ts";
import { checkKeys, duration, int, quote, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { child } from "./read-helpers.ts";

export const DEFAULT_GRACE_MS = 30_000;
export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_HEARTBEAT_MS = 10_000;

export function readWorker(f: ConfigFile, root: YamlMap): DaemonSettings["worker"] {
  const worker = child(f, root, "worker", []) ?? {};
  checkKeys(f, worker, ["worker"], ["concurrency", "grace_period", "metrics_port", "heartbeat"]);
  return {
    ...readWorkerMetricsPort(f, worker),
    concurrency: int(f, worker, "concurrency", ["worker"], { min: 1, max: 1024 }) ?? DEFAULT_CONCURRENCY,
    graceMs: duration(f, worker, "grace_period", ["worker"], DEFAULT_GRACE_MS) ?? DEFAULT_GRACE_MS,
    heartbeatMs: readHeartbeat(f, worker),
  };
}

/** `worker.heartbeat`: how often a held run renews its lease; 3 missed and it is retried elsewhere. */
function readHeartbeat(f: ConfigFile, worker: YamlMap): number {
  const ms = duration(f, worker, "heartbeat", ["worker"], DEFAULT_HEARTBEAT_MS);
  if (ms === undefined) return DEFAULT_HEARTBEAT_MS;
  if (ms >= 1_000 && ms <= 600_000) return ms;
  f.report(
    ["worker", "heartbeat"],
    "invalid_value",
    `"worker.heartbeat" must be between 1s and 10m (got ${quote(worker.heartbeat)}) - a run is retried on another worker after 3 missed heartbeats`,
  );
  return DEFAULT_HEARTBEAT_MS;
}
