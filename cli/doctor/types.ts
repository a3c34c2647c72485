import type { ConfigProblem, LoadResult } from "../../shared/config/types.ts";

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
}

export interface DoctorCheck {
  name: string;
  run(ctx: DoctorContext): Promise<CheckOutcome>;
}
