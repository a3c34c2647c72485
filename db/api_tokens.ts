import { createHash, randomBytes } from "node:crypto";
import { newId } from "../shared/ids.ts";
import type { Queryable } from "./queryable.ts";

/** The prefix makes a leaked svc token recognisable to secret scanners. */
const TOKEN_PREFIX = "svct_";

export interface ApiTokenRow {
  id: string;
  name: string;
  scopes: string[];
  sandboxed: boolean;
  invocation_id: string | null;
  /** a run token's binding: pipeline, agent, repo and worktree of its invocation */
  run: {
    pipeline?: string;
    agent?: string;
    repo?: string;
    /** the run's checkout: host tools run there */
    worktree?: string;
    /** the svc.tasks row of the agent the token was issued to */
    task?: string;
    /** an orchestrator may create tasks; a task (depth 1) may not */
    role?: "orchestrator" | "task";
    /** the agent may keep its result so far on its task (`keep_result_so_far`): a review's agent */
    keepsResult?: boolean;
    /**
     * the run's event came from outside the repository's team (a fork's pull request, a
     * non-member author): the notes it submits are untrusted. Only `false` counts as inside, so a
     * token issued without the field (by an older worker) is an outsider's.
     */
    outsider?: boolean;
  } | null;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

export interface IssuedToken {
  id: string;
  name: string;
  scopes: string[];
  /** shown to the caller once; only its hash is stored */
  token: string;
}

export function hashToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

interface TokenOptions {
  name: string;
  scopes: string[];
  sandboxed?: boolean;
  invocationId?: string;
  expiresAt?: Date;
  run?: ApiTokenRow["run"];
}

/** A token not stored yet: the value shown to its holder once, and the row that stores its hash. */
export interface NewToken {
  issued: IssuedToken;
  values: unknown[];
}

export function newToken(options: TokenOptions): NewToken {
  const id = newId("token");
  const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  return {
    issued: { id, name: options.name, scopes: options.scopes, token },
    values: [
      id,
      options.name,
      hashToken(token),
      options.scopes,
      options.sandboxed ?? false,
      options.invocationId ?? null,
      options.expiresAt ?? null,
      options.run ? JSON.stringify(options.run) : null,
    ],
  };
}

/**
 * The token's insert with its parameters numbered from `$first`, so an agent's task start can carry
 * it in the same statement (db/tasks.ts).
 */
export function tokenInsert(token: NewToken, first: number): { text: string; values: unknown[] } {
  const n = token.values.map((_, offset) => `$${first + offset}`).join(", ");
  return {
    text: `INSERT INTO svc.api_tokens (id, name, token_hash, scopes, sandboxed, invocation_id, expires_at, run) VALUES (${n})`,
    values: token.values,
  };
}

/** Stores a token made by newToken or newRunToken, in a statement of its own; its value, once. */
export async function storeToken(db: Queryable, token: NewToken): Promise<IssuedToken> {
  await db.query({ name: "svc_issue_token", ...tokenInsert(token, 1) });
  return token.issued;
}

export function issueToken(db: Queryable, options: TokenOptions): Promise<IssuedToken> {
  return storeToken(db, newToken(options));
}

/**
 * The token the worker gives a sandboxed agent run: it carries the scopes the run needs, and the
 * daemon refuses it for host tools whatever those scopes are.
 */
export function issueSandboxToken(
  db: Queryable,
  options: { invocationId: string; scopes: string[]; expiresAt?: Date },
): Promise<IssuedToken> {
  return issueToken(db, {
    name: `sandbox/${options.invocationId}`,
    scopes: options.scopes,
    sandboxed: true,
    invocationId: options.invocationId,
    ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
  });
}

/**
 * The token of one agent run (see worker/run/run-token.ts), not stored yet: bound to its invocation,
 * revoked when the run ends and expiring on its own should the worker die. `sandboxed` marks a run
 * inside a sandbox: host tools refuse its token whatever its scopes.
 */
export function newRunToken(options: {
  invocationId: string;
  scopes: string[];
  sandboxed: boolean;
  expiresAt: Date;
  run: NonNullable<ApiTokenRow["run"]>;
}): NewToken {
  return newToken({ name: `run/${options.invocationId}`, ...options });
}

/** A run token stored at once (an orchestrated task's agent: worker/run/run-token.ts withRunToken). */
export function issueRunToken(
  db: Queryable,
  options: Parameters<typeof newRunToken>[0],
): Promise<IssuedToken> {
  return storeToken(db, newRunToken(options));
}

/** A live token by the hash of its value; revoked and expired tokens are not found. */
export async function findTokenByHash(db: Queryable, hash: Buffer): Promise<ApiTokenRow | undefined> {
  const { rows } = await db.query<ApiTokenRow>(
    `SELECT id, name, scopes, sandboxed, invocation_id, run, created_at, expires_at, revoked_at
       FROM svc.api_tokens
      WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
    [hash],
  );
  return rows[0];
}

/** The revoke of one token, its id as `$param`: a task's end carries it (db/tasks.ts). */
export function tokenRevoke(param: number): string {
  return `UPDATE svc.api_tokens SET revoked_at = now() WHERE id = $${param} AND revoked_at IS NULL`;
}

export async function revokeToken(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query({ name: "svc_revoke_token", text: tokenRevoke(1), values: [id] });
  return (rowCount ?? 0) > 0;
}

export async function revokeInvocationTokens(db: Queryable, invocationId: string): Promise<number> {
  const { rowCount } = await db.query({
    name: "svc_revoke_invocation_tokens",
    text: "UPDATE svc.api_tokens SET revoked_at = now() WHERE invocation_id = $1 AND revoked_at IS NULL",
    values: [invocationId],
  });
  return rowCount ?? 0;
}

/**
 * The tokens of an invocation's own agent, not those of its orchestrated tasks: a lost orchestrator
 * is retried while its tasks keep running on other workers.
 */
export async function revokeRunTokensExceptTasks(db: Queryable, invocationId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE svc.api_tokens SET revoked_at = now()
      WHERE invocation_id = $1 AND revoked_at IS NULL AND run->>'role' IS DISTINCT FROM 'task'`,
    [invocationId],
  );
  return rowCount ?? 0;
}

/** The token of one orchestrated task (a lost task's token dies with its attempt). */
export async function revokeTaskTokens(db: Queryable, taskId: string): Promise<number> {
  const { rowCount } = await db.query(
    "UPDATE svc.api_tokens SET revoked_at = now() WHERE run->>'task' = $1 AND revoked_at IS NULL",
    [taskId],
  );
  return rowCount ?? 0;
}
