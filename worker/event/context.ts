/**
 * What a trigger's payload says about the code it concerns and the agent it addresses. The
 * shapes are the code host's (GitHub-style) and the tracker's (Linear-style) webhook bodies; a
 * bearer webhook or a manual fire may name `repo`, `sha` and `branch` at the top level or under `args`.
 */
export interface EventContext {
  repo: string;
  sha: string;
  branch: string;
  /** an agent the event or fire request addresses explicitly */
  agent?: string;
  /** a skill the fire request names explicitly */
  skill?: string;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

function named(value: unknown): string | undefined {
  return str(value) ?? str(obj(value)?.name);
}

export function eventContext(kind: string, payload: unknown): EventContext {
  const body = obj(payload) ?? {};
  const args = obj(body.args) ?? {};
  const repository = obj(body.repository);
  const pull = obj(body.pull_request);
  const head = obj(pull?.head);
  const checkSuite = obj(body.check_suite);
  const repo = str(repository?.full_name) ?? str(body.repo) ?? str(args.repo) ?? "";
  const sha =
    str(head?.sha) ??
    str(checkSuite?.head_sha) ??
    (str(body.after) && !/^0+$/.test(String(body.after)) ? str(body.after) : undefined) ??
    str(body.sha) ??
    str(args.sha) ??
    "";
  const ref = str(body.ref);
  const branch =
    str(head?.ref) ??
    str(checkSuite?.head_branch) ??
    (ref?.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : undefined) ??
    str(body.branch) ??
    str(args.branch) ??
    "";
  const context: EventContext = { repo, sha, branch };
  if (kind === "manual" || kind === "replay") {
    const agent = named(body.agent);
    const skill = named(body.skill);
    if (agent) context.agent = agent;
    if (skill) context.skill = skill;
  } else if (kind === "tracker") {
    // an agent-session event addresses one agent; the replacement of the removed agents.<name>.watch
    const session = obj(body.agentSession);
    const agent = named(session?.agent) ?? named(body.agent);
    if (agent) context.agent = agent;
  }
  return context;
}
