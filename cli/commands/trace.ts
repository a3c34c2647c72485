import { Args, Command } from "@oclif/core";
import type { TokenUsage } from "../../db/tasks.ts";
import { fromDaemon } from "../from-daemon.ts";

/** A kind prefix plus at least six id characters, as the daemon requires. */
const TRACE_ID = /^(trg|run|inv|tsk)_[a-z2-7]{6,}$/;

interface Diagnostic {
  code: string;
  message: string;
}
interface TraceAnswer {
  resolved: string;
  trigger: Record<string, unknown> | null;
  workload: Record<string, unknown> | null;
  workloads: Record<string, unknown>[];
  invocations: (Record<string, unknown> & {
    id: string;
    workloadId: string;
    diagnostic: Diagnostic | null;
  })[];
  tasks: (Record<string, unknown> & { id: string; invocationId: string; parentId?: string | null })[];
  artifacts: Record<string, { manifest: Record<string, unknown>[]; rendered: Record<string, string | null> }>;
  /** published outputs (handler, status, URL of the posted object); absent from older daemons */
  deliveries?: Delivery[];
}
interface Delivery {
  invocationId: string;
  key: string;
  handler: string;
  status: string;
  url: string | null;
  attempts: number;
  lastError: string | null;
}

export interface TraceJson {
  trigger: TraceAnswer["trigger"];
  workload: TraceAnswer["workload"];
  invocations: (TraceAnswer["invocations"][number] & {
    diagnostic_code: string | null;
    diagnostic_message: string | null;
    deliveries: Delivery[];
  })[];
  tasks: TraceAnswer["tasks"];
  artifacts: TraceAnswer["artifacts"];
}

export default class Trace extends Command {
  static override summary = "Show the lineage of a trigger, workload, invocation or task";
  static override description =
    "Asks the running daemon (GET /trace/:id at SVC_DAEMON_URL) for the tree around an id: trigger, workload, " +
    "invocations with their diagnostics, tasks, artifacts and published outputs (handler, status, URL). The id is a kind prefix (trg_, run_, inv_, tsk_) " +
    "plus at least six characters; a unique prefix is resolved and `resolved <input> -> <full-id>` is written " +
    "to stderr. An ambiguous prefix lists the candidates and exits 1. Needs `triggers:read`.";
  static override examples = [
    "<%= config.bin %> trace trg_4kq7zd",
    "<%= config.bin %> trace inv_m2x9ab3c --json",
    "SVC_DAEMON_URL=https://svc.example.com <%= config.bin %> trace run_abcdef",
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.string({
      description: "a trg_, run_, inv_ or tsk_ id, or a prefix of at least six characters after it",
      required: true,
    }),
  };

  async run(): Promise<TraceJson> {
    const { args } = await this.parse(Trace);
    const input = args.id.trim();
    if (!TRACE_ID.test(input)) {
      this.error(
        `"${input}" is not a traceable id: use trg_, run_, inv_ or tsk_ followed by at least six characters`,
        {
          exit: 2,
        },
      );
    }
    const answer: TraceAnswer = await fromDaemon(
      this,
      (client) => client.get<TraceAnswer>(`/trace/${encodeURIComponent(input)}`),
      (error) => {
        if (error.code === "ambiguous_id") {
          const candidates = (error.details.candidates as string[] | undefined) ?? [];
          // straight to stderr: oclif's logToStderr is silent under --json, and the contract wants these lines
          process.stderr.write(`${input} is ambiguous; candidates:\n`);
          for (const candidate of candidates) process.stderr.write(`  ${candidate}\n`);
          this.exit(1);
        }
      },
    );
    // also with --json: stdout holds only the document, stderr says which id the prefix resolved to
    if (answer.resolved !== input) process.stderr.write(`resolved ${input} -> ${answer.resolved}\n`);
    const json: TraceJson = {
      trigger: answer.trigger,
      workload: answer.workload,
      invocations: answer.invocations.map((invocation) => ({
        ...invocation,
        diagnostic_code: invocation.diagnostic?.code ?? null,
        diagnostic_message: invocation.diagnostic?.message ?? null,
        // the contract fixes the top-level keys: an invocation's published outputs travel with it
        deliveries: (answer.deliveries ?? []).filter((row) => row.invocationId === invocation.id),
      })),
      tasks: answer.tasks,
      artifacts: answer.artifacts,
    };
    if (!this.jsonEnabled()) for (const line of renderTree(answer)) this.log(line);
    return json;
  }
}

type TraceTask = TraceAnswer["tasks"][number];

function taskLine(task: TraceTask): string {
  const exit = task.exitCode === null || task.exitCode === undefined ? "" : `  exit ${task.exitCode}`;
  const usage = task.usage as TokenUsage | null | undefined;
  const tokens = usage ? `  ${usageText(usage)}` : "";
  const line = `task ${task.id}  ${task.kind} ${task.name}  ${task.status}${exit}${tokens}`;
  if (!task.parentId) return line;
  const diag = task.diagnostic as Diagnostic | null;
  const duration = typeof task.durationMs === "number" ? `  ${(task.durationMs / 1000).toFixed(1)}s` : "";
  return `${line}${task.target ? `  target ${task.target}` : ""}${duration}${diag ? `  [${diag.code}] ${diag.message}` : ""}`;
}

/** `tokens in 1200 out 80 (cache read 1000)  2 requests  $0.0042`: what the gateway read of a task's model calls. */
export function usageText(usage: TokenUsage): string {
  const cache = usage.cache_read_tokens ? ` (cache read ${usage.cache_read_tokens})` : "";
  const requests =
    usage.requests === undefined ? "" : `  ${usage.requests} request${usage.requests === 1 ? "" : "s"}`;
  const cost = usage.cost_usd === undefined ? "" : `  $${usage.cost_usd.toFixed(4)}`;
  return `tokens in ${usage.input_tokens} out ${usage.output_tokens}${cache}${requests}${cost}`;
}

export function renderTree(answer: TraceAnswer): string[] {
  const lines: string[] = [];
  const t = answer.trigger;
  let indent = "";
  if (t) {
    const diag = t.diagnostic as Diagnostic | null;
    lines.push(
      `trigger ${t.id}  ${t.kind} ${t.source} ${t.eventName}  ${t.status}${diag ? `  [${diag.code}] ${diag.message}` : ""}`,
    );
    indent = "  ";
  }
  const workloads = answer.workloads.length ? answer.workloads : answer.workload ? [answer.workload] : [];
  if (!workloads.length && t) lines.push(`${indent}(no workloads)`);
  for (const workload of workloads) {
    lines.push(
      `${indent}workload ${workload.id}  ${workload.pipeline}  ${workload.status}${workload.owner ? `  owner ${workload.owner}` : ""}`,
    );
    for (const invocation of answer.invocations.filter((row) => row.workloadId === workload.id)) {
      const diag = invocation.diagnostic;
      lines.push(
        `${indent}  invocation ${invocation.id}  ${invocation.status}${invocation.target ? `  target ${invocation.target}` : ""}` +
          `${diag ? `  [${diag.code}] ${diag.message}` : ""}`,
      );
      const tasks = answer.tasks.filter((row) => row.invocationId === invocation.id);
      for (const task of tasks.filter((row) => !row.parentId)) {
        lines.push(`${indent}    ${taskLine(task)}`);
        // an orchestrator's tasks, as a tree under its agent task
        for (const child of tasks.filter((row) => row.parentId === task.id))
          lines.push(`${indent}      ${taskLine(child)}`);
      }
      const artifacts = answer.artifacts[invocation.id];
      for (const artifact of artifacts?.manifest ?? []) {
        lines.push(`${indent}    artifact ${artifact.name}  ${artifact.mediaType}  ${artifact.size} bytes`);
        if (artifact.name !== "transcript") continue;
        for (const line of agentSummary(artifacts?.rendered.transcript)) lines.push(`${indent}      ${line}`);
      }
      for (const delivery of (answer.deliveries ?? []).filter((row) => row.invocationId === invocation.id)) {
        const where = delivery.url ?? (delivery.lastError ? `[${delivery.lastError}]` : "");
        lines.push(
          `${indent}    output ${delivery.key}  ${delivery.handler}  ${delivery.status}  ${where}`.trimEnd(),
        );
      }
    }
  }
  return lines;
}

/** The summary an agent CLI runtime appends to its transcript: turns, tool calls, token usage. */
function agentSummary(transcript: string | null | undefined): string[] {
  return (transcript ?? "")
    .split("\n")
    .filter((line) => /^# (turns|tool calls|tokens|mcp servers): /.test(line));
}
