import type { ConfigSnapshot } from "../../shared/config/types.ts";
import { Redactor } from "../../shared/redact.ts";
import type { CredentialSecrets } from "../credentials/secrets.ts";

/**
 * The secret values of the runs held on this worker, by invocation, so that every artifact stored of
 * a run is redacted with them (artifacts.ts reads them by the artifact's invocation, whichever path
 * made it). A run's values are the worker's (every credential value it resolved, every inline secret
 * of its configuration) and what the run was given: its agents' run tokens, a principal's code-host
 * token. An orchestrated run's tasks held here share their invocation's entry: a task's token is
 * redacted from the orchestrator's transcript as well.
 */
export interface RunSecrets {
  /** a value given to the run's processes from now on */
  add(value: string): void;
  /** the run's end: once every holder of the invocation closed, its values are dropped */
  close(): void;
}

interface Entry {
  holders: number;
  base: readonly string[];
  added: Set<string>;
  /** built on first use after a value was added: once per agent attempt, not per artifact */
  redactor?: Redactor;
}

const open = new Map<string, Entry>();
/** the worker's own values, gathered once per worker (its credentials object is made once) */
const workerValues = new WeakMap<CredentialSecrets, readonly string[]>();
/**
 * What an artifact made outside any open run is redacted with: every worker's values seen in this
 * process (a path that forgot to open its run still loses the credentials), built when first needed.
 */
const everyWorkerValue = new Set<string>();
let outsideRuns: Redactor | undefined;

/** The worker's values: its resolved credentials and every inline secret its configuration holds. */
function valuesOf(deps: { config: Readonly<ConfigSnapshot>; secrets: CredentialSecrets }): readonly string[] {
  let values = workerValues.get(deps.secrets);
  if (!values) {
    values = [...new Set([...deps.secrets.values(), ...inlineSecrets(deps.config)])];
    workerValues.set(deps.secrets, values);
    for (const value of values) everyWorkerValue.add(value);
    outsideRuns = undefined;
  }
  return values;
}

/**
 * Every `{ kind: "inline", value }` of the snapshot (a SecretSource: codehost tokens, chat bots'
 * tokens, webhook and auth secrets). Walked, not listed, so a secret a later section adds is found.
 */
function inlineSecrets(config: unknown): string[] {
  const found: string[] = [];
  const seen = new Set<object>();
  const walk = (value: unknown) => {
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    const record = value as Record<string, unknown>;
    if (record.kind === "inline" && typeof record.value === "string") found.push(record.value);
    for (const inner of Object.values(record)) walk(inner);
  };
  walk(config);
  return found;
}

/** Opens (or joins) the secrets of `invocationId` on this worker; close it when the run ends. */
export function openRunSecrets(
  invocationId: string,
  deps: { config: Readonly<ConfigSnapshot>; secrets: CredentialSecrets },
): RunSecrets {
  let entry = open.get(invocationId);
  if (!entry) {
    entry = { holders: 0, base: valuesOf(deps), added: new Set() };
    open.set(invocationId, entry);
  }
  entry.holders++;
  const held = entry;
  let closed = false;
  return {
    add(value) {
      if (held.added.has(value)) return;
      held.added.add(value);
      held.redactor = undefined;
    },
    close() {
      if (closed) return;
      closed = true;
      if (--held.holders === 0 && open.get(invocationId) === held) open.delete(invocationId);
    },
  };
}

/** The redactor of the artifacts of `invocationId`: the run's values and the shapes of shared/redact.ts. */
export function redactorFor(invocationId: string): Redactor {
  const entry = open.get(invocationId);
  if (!entry) {
    outsideRuns ??= new Redactor(everyWorkerValue);
    return outsideRuns;
  }
  entry.redactor ??= new Redactor([...entry.base, ...entry.added]);
  return entry.redactor;
}
