import { connectDaemon, DaemonError, DaemonUnreachableError } from "../client.ts";
import type { CheckOutcome, DoctorCheck } from "./types.ts";

interface Probe {
  name: string;
  status: "ok" | "warning" | "error";
  message: string;
}

/**
 * `svc doctor` asks a reachable daemon for its own probes (GET /admin/doctor, scope `admin`):
 * database, migrations, queue, drain, dead credentials, refused tokens, the workers' model gateways. No daemon reachable at
 * SVC_DAEMON_URL is not an error for doctor, which also runs before the first start.
 */
export const daemonProbeCheck: DoctorCheck = {
  name: "daemon",
  async run(ctx): Promise<CheckOutcome> {
    let probes: Probe[];
    let url = "";
    try {
      const client = await connectDaemon(ctx.env);
      url = client.url;
      probes = (await client.get<{ probes: Probe[] }>("/admin/doctor")).probes;
    } catch (error) {
      if (error instanceof DaemonUnreachableError) {
        return {
          status: "skipped",
          detail: `no daemon reachable at ${url || "SVC_DAEMON_URL"}`,
          problems: [],
        };
      }
      if (error instanceof DaemonError) {
        return {
          status: "warning",
          detail: `the daemon at ${url} refused its probes (${error.status}): ${error.message}`,
          problems: [],
        };
      }
      throw error;
    }
    const worst = probes.some((probe) => probe.status === "error")
      ? "error"
      : probes.some((probe) => probe.status === "warning")
        ? "warning"
        : "ok";
    const detail = probes
      // the workers' gateway listeners are always shown: where the agents' model calls go
      .filter((probe) => probe.status !== "ok" || worst === "ok" || probe.name === "gateway")
      .map((probe) => `${probe.name}: ${probe.message}`)
      .join("; ");
    return {
      status: worst,
      detail: `${url}: ${detail}`,
      problems: probes
        .filter((probe) => probe.status !== "ok")
        .map((probe) => ({
          file: "daemon",
          path: probe.name,
          code: `daemon_${probe.name}`,
          severity: probe.status === "error" ? ("error" as const) : ("warning" as const),
          message: probe.message,
        })),
    };
  },
};
