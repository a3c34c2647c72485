import type { ConfigProblem, LoadResult, Target } from "../../shared/config/types.ts";

/**
 * `svc doctor` runs a list of named checks in order. Each returns a status, a one-line detail and
 * the problems it found (in the configuration-problem shape, so `--json` has one list). Checks that
 * need a running daemon are appended to DOCTOR_CHECKS by the daemon-probe module.
 */
export type CheckStatus = "ok" | "warning" | "error" | "skipped";

export interface CheckOutcome {
  status: CheckStatus;
  detail: string;
  problems: ConfigProblem[];
}

export interface DoctorContext {
  dir: string;
  env: NodeJS.ProcessEnv;
  /** loaded once, shared by every check that needs the configuration */
  config(): Promise<LoadResult>;
  /**
   * A model gateway of svc's own to probe targets' keys through (`--deep`): the worker's, handed in
   * by the doctor command as `svc worker` hands in the worker, so no check imports the worker.
   */
  keyProber?: () => Promise<KeyProber>;
}

/** What the target-keys check asks of the gateway (worker/gateway/probe.ts). */
export interface KeyProber {
  probe(
    target: Exclude<Target, { runtime: "command" }>,
    credential: string,
    key: string,
  ): Promise<{
    status: number;
    message?: string;
    refusal?: { kind: string };
    unreached: boolean;
    tokens: number;
    origin: string;
  }>;
  reasons: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

export interface DoctorCheck {
  name: string;
  run(ctx: DoctorContext): Promise<CheckOutcome>;
}
