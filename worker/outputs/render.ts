import type { Member } from "../../shared/config/types.ts";

/**
 * What every published body carries: a short visible footer naming the pipeline's version and the
 * trigger, and a hidden marker naming the invocation and output key, which a retry looks for on
 * the target before posting again.
 */
export interface Stamp {
  pipeline: string;
  version: string;
  /** the trigger, or the invocation when a run has none */
  origin: string;
  invocation: string;
  /** the invocation's seal (db/marker-key.ts): what makes a marker one only svc can write */
  seal: string;
  /**
   * What the run's model calls used by the time the body was rendered (its tasks' usage, from the
   * gateway's ledger): a later attempt of the same invocation may add to it. `costUsd` is null
   * when no target it ran on has a `price`.
   */
  usage?: { tokens: number; costUsd: number | null };
}

/** What identifies one output of one run on the target: its invocation and seal. */
export type Sealed = Pick<Stamp, "invocation" | "seal">;

export function marker(run: Sealed, key: string): string {
  return `<!-- svc:${run.invocation}:${key}:${run.seal} -->`;
}

/** `pr-review 2.0.0 · trg_… · 12,345 tokens · $0.04`: the spend only when the run used a model through the gateway. */
export function footerLine(stamp: Stamp): string {
  const line = `${stamp.pipeline} ${stamp.version} · ${stamp.origin}`;
  const usage = stamp.usage;
  if (!usage || usage.tokens <= 0) return line;
  const tokens = `${usage.tokens.toLocaleString("en-US")} token${usage.tokens === 1 ? "" : "s"}`;
  return `${line} · ${tokens}${usage.costUsd ? ` · ${dollars(usage.costUsd)}` : ""}`;
}

/** Cents as people read a bill; a run cheaper than a cent still shows it cost something. */
export function dollars(usd: number): string {
  if (usd >= 0.01) return `$${usd.toFixed(2)}`;
  return usd >= 0.0001 ? `$${usd.toFixed(4)}` : "<$0.0001";
}

/** A Markdown body for the code host: the text, a rule, the footer in small type, then the marker. */
export function stampBody(body: string, stamp: Stamp, key: string): string {
  const text = body.trimEnd();
  return `${text}${text ? "\n\n" : ""}---\n<sub>${footerLine(stamp)}</sub>\n${marker(stamp, key)}`;
}

export function hasMarker(body: unknown, run: Sealed, key: string): boolean {
  return typeof body === "string" && body.includes(marker(run, key));
}

const MENTION = /(^|[^A-Za-z0-9_`<])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))(?![A-Za-z0-9-])/g;

/**
 * `@handle` of a member with both a code-host handle and a chat id becomes the chat mention
 * `<@id>`; other `@words` stay as written.
 */
export function renderMentions(text: string, members: readonly Member[]): string {
  const ids = new Map<string, string>();
  for (const member of members) {
    const handle = member.identities.codehost?.handle;
    const id = member.identities.chat?.id;
    if (handle && id) ids.set(handle.toLowerCase(), id);
  }
  if (ids.size === 0) return text;
  return text.replace(MENTION, (whole, before: string, handle: string) => {
    const id = ids.get(handle.toLowerCase());
    return id ? `${before}<@${id}>` : whole;
  });
}
