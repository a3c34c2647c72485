import { dismissalsOf, judgedThreads, recordDismissal } from "../../db/notes.ts";
import { type Dismissed, fingerprintsIn, ruleKey, ruleOf } from "./findings.ts";
import type { PublishDeps } from "./publish-deps.ts";

/**
 * The host-neutral half of dismissed findings: each of svc's own threads not judged before is
 * judged once by its host's rules (dismissals.ts on GitHub, gitlab-dismissals.ts on GitLab), a
 * dismissal becomes a note of kind `dismissal` for the repository (db/notes.ts recordDismissal),
 * and a review drops the findings matching any of the repository's: the same fingerprint, or the
 * same rule (first line) on the same path.
 */
const DISMISSING_WORDS = /\b(won['’]?t fix|wontfix|false positive)\b/i;

/** The dismissing words a reply says ("won't fix", "false positive"), if any. */
export function dismissingWords(text: string | null | undefined): string | undefined {
  return DISMISSING_WORDS.exec(text ?? "")?.[1];
}

/** One of svc's own threads, with how its host tells whether a member dismissed it. */
export interface DismissalCandidate {
  /** the host's thread id, the key it is judged once by */
  thread: string;
  path: string;
  /** svc's finding as it stands in the thread's first comment (its fingerprint marker included) */
  body: string;
  /** why a member dismissed it ("thumbed down by @x"), undefined when nobody did */
  judge: () => Promise<string | undefined>;
}

/**
 * Judges the candidates not judged before (in order; `judge` may ask the host, so the cheap ones
 * first is the caller's part), records each dismissal once, then returns every dismissal of
 * `repo` for the review to drop.
 */
export async function recordDismissals(
  deps: PublishDeps,
  repo: string,
  candidates: readonly DismissalCandidate[],
): Promise<Dismissed> {
  const judged = await judgedThreads(
    deps.pool,
    candidates.map((candidate) => candidate.thread),
  );
  for (const candidate of candidates) {
    if (judged.has(candidate.thread)) continue;
    const why = await candidate.judge();
    if (!why) continue;
    const recorded = await recordDismissal(deps.pool, {
      repo,
      path: candidate.path,
      fingerprint: fingerprintsIn(candidate.body)[0] ?? null,
      rule: ruleOf(candidate.body),
      thread: candidate.thread,
      why,
      pipeline: null,
      invocationId: null,
    });
    if (recorded)
      deps.logger.info("a finding was dismissed: later reviews drop it", {
        event: "output.finding_dismissed",
        repo,
        path: candidate.path,
        note: recorded.id,
        why,
      });
  }
  const dismissals = await dismissalsOf(deps.pool, repo);
  return {
    fingerprints: new Set(dismissals.flatMap((entry) => (entry.fingerprint ? [entry.fingerprint] : []))),
    rules: new Set(dismissals.map((entry) => ruleKey(entry.path, entry.rule))),
  };
}

/** `ask` memoised per user for one review: a busy thread's members are asked about once. */
export function memberCache<K>(ask: (user: K) => Promise<boolean>): (user: K) => Promise<boolean> {
  const answers = new Map<K, Promise<boolean>>();
  return (user) => {
    let answer = answers.get(user);
    if (!answer) {
      answer = ask(user);
      answers.set(user, answer);
    }
    return answer;
  };
}
