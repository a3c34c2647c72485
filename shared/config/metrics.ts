import { checkKeys, int, mapping, type YamlMap } from "./read.ts";
import { secretSource } from "./secrets.ts";
import type { ConfigFile } from "./source.ts";
import type { MetricsSettings } from "./types.ts";

/**
 * `metrics:` in daemon.yaml: the bearer token a Prometheus scraper sends to `GET /metrics`
 * (`token: ${ENV}` or `token_ref: metrics/token`). It grants only the metrics route, so a
 * scraper never holds an `admin` token. Absent, `/metrics` needs `admin` (or nothing on a local install).
 */
export function readMetrics(f: ConfigFile, root: YamlMap): MetricsSettings | undefined {
  if (root.metrics === undefined || root.metrics === null) return undefined;
  const metrics = mapping(f, root.metrics, ["metrics"]);
  if (!metrics) return undefined;
  checkKeys(f, metrics, ["metrics"], ["token", "token_ref"]);
  const token = secretSource(f, metrics, ["metrics"], {
    secretKey: "token",
    refKey: "token_ref",
    expectedRef: "metrics/token",
  });
  return token ? { token } : undefined;
}

/** `worker.metrics_port`: the port a worker serves `/metrics` on; absent = off. */
export function readWorkerMetricsPort(f: ConfigFile, worker: YamlMap): { metricsPort?: number } {
  const port = int(f, worker, "metrics_port", ["worker"], { min: 1, max: 65_535 });
  return port === undefined ? {} : { metricsPort: port };
}
