import { timingSafeEqual } from "node:crypto";
import type { Queryable } from "./queryable.ts";

/**
 * The GitHub App setup in progress, shared by `svc setup github` (which starts it and waits) and
 * the ingress (which serves its page and takes GitHub's redirect): one `svc.daemon_state` row, the
 * processes sharing nothing else. Its `state` is the value the page's form sends to GitHub and
 * GitHub sends back with the code; only a redirect carrying it may finish the setup, and only once.
 */
export const GITHUB_SETUP_KEY = "setup:github";

/** How long a setup waits: GitHub's code (and its whole manifest flow) lives one hour. */
export const GITHUB_SETUP_TTL_MS = 60 * 60_000;

export type GithubSetupStatus = "waiting" | "exchanging" | "done" | "failed";

export interface GithubSetupResult {
  appId: number;
  slug: string;
  name: string;
  htmlUrl: string;
  installUrl: string;
  owner?: string;
  /** the daemon.yaml written */
  file: string;
  secrets: string[];
}

export interface GithubSetupSession {
  /** which `svc setup github` run started it */
  id: string;
  state: string;
  /** register the App for this organisation instead of the signed-in user */
  org?: string;
  /** replace an App, a code-host token or a `github` source daemon.yaml already has */
  force: boolean;
  createdAt: string;
  expiresAt: string;
  status: GithubSetupStatus;
  pageOpenedAt?: string;
  error?: string;
  result?: GithubSetupResult;
}

/** Starts a setup, replacing any earlier one (its page and its redirect stop working). */
export async function startGithubSetup(
  db: Queryable,
  setup: { id: string; state: string; org?: string; force: boolean; ttlMs?: number },
): Promise<GithubSetupSession> {
  const now = Date.now();
  const session: GithubSetupSession = {
    id: setup.id,
    state: setup.state,
    ...(setup.org ? { org: setup.org } : {}),
    force: setup.force,
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + (setup.ttlMs ?? GITHUB_SETUP_TTL_MS)).toISOString(),
    status: "waiting",
  };
  await db.query(
    `INSERT INTO svc.daemon_state (key, value) VALUES ($1, $2::jsonb)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
    [GITHUB_SETUP_KEY, JSON.stringify(session)],
  );
  return session;
}

export async function readGithubSetup(db: Queryable): Promise<GithubSetupSession | null> {
  const { rows } = await db.query<{ value: GithubSetupSession }>(
    "SELECT value FROM svc.daemon_state WHERE key = $1",
    [GITHUB_SETUP_KEY],
  );
  return rows[0]?.value ?? null;
}

export function isExpired(session: GithubSetupSession, now = Date.now()): boolean {
  return Date.parse(session.expiresAt) <= now;
}

/** Whether `state` is the setup's own, compared in constant time. */
export function stateMatches(session: GithubSetupSession, state: string): boolean {
  const expected = Buffer.from(session.state, "utf8");
  const given = Buffer.from(state, "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Progress for the waiting command: the page was served (first time only). */
export async function markPageOpened(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE svc.daemon_state
     SET value = value || jsonb_build_object('pageOpenedAt', now()), updated_at = now()
     WHERE key = $1 AND value->>'id' = $2 AND NOT value ? 'pageOpenedAt'`,
    [GITHUB_SETUP_KEY, id],
  );
}

/**
 * Takes the waiting setup `id` for the exchange of a code: true for exactly one caller, while it
 * waits and has not expired. The state was checked by the caller; it is required again here, so a
 * setup replaced meanwhile (another `svc setup github`) is not taken.
 */
export async function claimGithubSetup(db: Queryable, id: string, state: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE svc.daemon_state
     SET value = value || '{"status":"exchanging"}'::jsonb, updated_at = now()
     WHERE key = $1 AND value->>'id' = $2 AND value->>'state' = $3 AND value->>'status' = 'waiting'
       AND (value->>'expiresAt')::timestamptz > now()`,
    [GITHUB_SETUP_KEY, id, state],
  );
  return (rowCount ?? 0) > 0;
}

/** Ends the setup `id` (done with its result, or failed with the message the command prints). */
export async function finishGithubSetup(
  db: Queryable,
  id: string,
  outcome: { status: "done"; result: GithubSetupResult } | { status: "failed"; error: string },
): Promise<void> {
  await db.query(
    `UPDATE svc.daemon_state SET value = value || $3::jsonb, updated_at = now()
     WHERE key = $1 AND value->>'id' = $2`,
    [GITHUB_SETUP_KEY, id, JSON.stringify(outcome)],
  );
}

/** Removes the setup `id` when it is still waiting (the command was interrupted or gave up). */
export async function cancelGithubSetup(db: Queryable, id: string): Promise<void> {
  await db.query(
    `DELETE FROM svc.daemon_state WHERE key = $1 AND value->>'id' = $2 AND value->>'status' = 'waiting'`,
    [GITHUB_SETUP_KEY, id],
  );
}
