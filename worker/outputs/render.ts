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
}

/** What identifies one output of one run on the target: its invocation and seal. */
export type Sealed = Pick<Stamp, "invocation" | "seal">;

export function marker(run: Sealed, key: string): string {
  return `<!-- svc:${run.invocation}:${key}:${run.seal} -->`;
}

export function footerLine(stamp: Stamp): string {
  return `${stamp.pipeline} ${stamp.version} · ${stamp.origin}`;
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
