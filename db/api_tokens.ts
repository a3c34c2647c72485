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

export async function issueToken(
  db: Queryable,
  options: {
    name: string;
    scopes: string[];
    sandboxed?: boolean;
    invocationId?: string;
    expiresAt?: Date;
    run?: ApiTokenRow["run"];
  },
): Promise<IssuedToken> {
  const id = newId("token");
  const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  await db.query({
    name: "svc_issue_token",
    text: `INSERT INTO svc.api_tokens (id, name, token_hash, scopes, sandboxed, invocation_id, expires_at, run)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
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
  });
  return { id, name: options.name, scopes: options.scopes, token };
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
 * The token of one agent run (see worker/run-token.ts): bound to its invocation, revoked when the
 * run ends and expiring on its own should the worker die. `sandboxed` marks a run inside a sandbox:
 * host tools refuse its token whatever its scopes.
 */
export function issueRunToken(
  db: Queryable,
  options: {
    invocationId: string;
    scopes: string[];
    sandboxed: boolean;
    expiresAt: Date;
    run: NonNullable<ApiTokenRow["run"]>;
  },
): Promise<IssuedToken> {
  return issueToken(db, {
    name: `run/${options.invocationId}`,
    scopes: options.scopes,
    sandboxed: options.sandboxed,
    invocationId: options.invocationId,
    expiresAt: options.expiresAt,
    run: options.run,
  });
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

export async function revokeToken(db: Queryable, id: string): Promise<boolean> {
  // named: every run revokes its agent's token, so each connection parses and plans this once
  const { rowCount } = await db.query({
    name: "svc_revoke_token",
    text: "UPDATE svc.api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL",
    values: [id],
  });
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
