import type { NoteReader } from "../../db/notes.ts";
import type { Principal } from "./principal.ts";

/**
 * Which notes a caller reads (db/notes.ts NoteReader). A run token reads as its run: its
 * repository's notes and the team's, trusted or its own; model output and a stranger's pull request
 * drive it, so it never widens this. Any other caller is an operator (configured and issued tokens,
 * brokers, the loopback client) and reads every note; `untrusted` says whether a listing includes
 * the untrusted ones (a read by id always finds them, so an operator can review one).
 */
export function noteReaderOf(principal: Principal, untrusted: boolean): NoteReader {
  const { run } = principal;
  if (run) return { kind: "run", repo: run.repo || null, invocation: run.invocation };
  return { kind: "operator", untrusted };
}

/**
 * Whether a note the caller submits is trusted: an operator's is; a run's only when its worker
 * recorded that the event came from the repository's own people (`outsider: false`). A token
 * without that record (issued before it existed) counts as an outsider's.
 */
export function submitsTrusted(principal: Principal): boolean {
  return principal.run ? principal.run.outsider === false : true;
}
