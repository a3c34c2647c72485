import type { DaemonClient } from "../client.ts";

/** `owner/repo#number`, as GitHub writes a pull request's reference. */
export interface PullReference {
  repo: string;
  number: number;
}

const REFERENCE = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)#([1-9][0-9]{0,9})$/;

export function parsePullReference(text: string): PullReference | string {
  const match = REFERENCE.exec(text.trim());
  if (!match)
    return `"${text}" is not a pull request reference: write it as <owner>/<repo>#<number>, e.g. acme/api#42`;
  return { repo: `${match[1]}/${match[2]}`, number: Number(match[3]) };
}

interface Trace {
  trigger: { status: string; diagnostic: { code: string; message: string } | null } | null;
  workloads: { id: string; pipeline: string }[];
  invocations: {
    id: string;
    workloadId: string;
    status: string;
    diagnostic: { code: string; message: string } | null;
  }[];
  artifacts: Record<string, { rendered: Record<string, string | null> }>;
}

/** One pipeline's rehearsed run: how it ended, and the review it would have posted. */
export interface FiredRun {
  pipeline: string;
  invocation: string;
  status: string;
  diagnostic: { code: string; message: string } | null;
  /** the `held/outputs.md` artifact; null when the run ended before its outputs */
  wouldPost: string | null;
}

export interface FireReport {
  trigger: string;
  head: string;
  /** the trigger's end: `completed`, `error` or `discarded`; `timeout` when doctor stopped waiting */
  status: string;
  diagnostic: { code: string; message: string } | null;
  runs: FiredRun[];
}

const SETTLED = new Set(["completed", "error", "discarded"]);

/**
 * `svc doctor --deep --fire`: asks the daemon to rehearse the pull request's `synchronize` with
 * outputs held back (POST /repos/:owner/:name/pulls/:number/rehearse), follows its trigger through
 * `GET /trace/:id` until it settles, saying each change of state, and answers each pipeline's run
 * with the review it would have posted. The daemon builds the event from GitHub's answer; nothing
 * is posted to the pull request.
 */
export async function fireRehearsal(
  client: DaemonClient,
  pull: PullReference,
  options: { log: (line: string) => void; timeoutMs: number; pollMs?: number },
): Promise<FireReport> {
  const [owner, name] = pull.repo.split("/");
  const started = await client.post<{ trigger: string; head: string }>(
    `/repos/${encodeURIComponent(owner!)}/${encodeURIComponent(name!)}/pulls/${pull.number}/rehearse`,
    {},
  );
  options.log(
    `rehearsing ${pull.repo}#${pull.number} at ${started.head.slice(0, 12)} with outputs held back: trigger ${started.trigger}`,
  );
  const deadline = Date.now() + options.timeoutMs;
  let said = "";
  for (;;) {
    const trace = await client.get<Trace>(`/trace/${started.trigger}`);
    const state = describe(trace);
    if (state !== said) options.log(`  ${state}`);
    said = state;
    const status = trace.trigger?.status ?? "queued";
    if (SETTLED.has(status) || Date.now() > deadline) {
      return {
        trigger: started.trigger,
        head: started.head,
        status: SETTLED.has(status) ? status : "timeout",
        diagnostic: trace.trigger?.diagnostic ?? null,
        runs: runsOf(trace),
      };
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
  }
}

function describe(trace: Trace): string {
  const status = trace.trigger?.status ?? "queued";
  if (trace.invocations.length === 0) return `trigger ${status}`;
  return runsOf(trace)
    .map((run) => `${run.pipeline}: ${run.status}`)
    .join(", ");
}

function runsOf(trace: Trace): FiredRun[] {
  const pipelines = new Map(trace.workloads.map((workload) => [workload.id, workload.pipeline]));
  return trace.invocations.map((invocation) => ({
    pipeline: pipelines.get(invocation.workloadId) ?? "?",
    invocation: invocation.id,
    status: invocation.status,
    diagnostic: invocation.diagnostic,
    wouldPost: trace.artifacts[invocation.id]?.rendered["held/outputs.md"] ?? null,
  }));
}

/** The report as doctor prints it: a line per run, then what each would have posted. */
export function fireLines(pull: PullReference, report: FireReport): string[] {
  const lines: string[] = [];
  if (report.status === "timeout")
    lines.push(
      `the rehearsal of ${pull.repo}#${pull.number} had not finished when doctor stopped waiting; follow it with svc trace ${report.trigger}`,
    );
  if (report.runs.length === 0) {
    const why = report.diagnostic ? `${report.diagnostic.code}: ${report.diagnostic.message}` : report.status;
    lines.push(
      `no pipeline ran for ${pull.repo}#${pull.number}'s synchronize (${why}); a pipeline needs trigger.codehost with pull_request.synchronize on ${pull.repo}`,
    );
    return lines;
  }
  for (const run of report.runs) {
    const why = run.diagnostic ? ` (${run.diagnostic.code}: ${run.diagnostic.message})` : "";
    lines.push(`${run.pipeline} ${run.status}${why}  [svc trace ${run.invocation}]`);
    if (run.wouldPost !== null) {
      lines.push(`--- what ${run.pipeline} would post (held back, nothing was posted) ---`);
      lines.push(run.wouldPost.trimEnd());
      lines.push("---");
    }
  }
  return lines;
}

/** A rehearsal is good when every run completed and none was left waiting. */
export function fireOk(report: FireReport): boolean {
  return (
    report.status === "completed" &&
    report.runs.length > 0 &&
    report.runs.every((run) => run.status === "completed")
  );
}
