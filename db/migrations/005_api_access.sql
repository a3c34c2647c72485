-- Daemon API access: sandboxed-agent tokens and the drain switch.

-- A token the daemon hands to a sandboxed agent run; host tools refuse it whatever its scopes.
ALTER TABLE svc.api_tokens ADD COLUMN sandboxed boolean NOT NULL DEFAULT false;
-- the invocation a sandboxed token was issued for, so it can be revoked when the run ends
ALTER TABLE svc.api_tokens ADD COLUMN invocation_id text;
ALTER TABLE svc.api_tokens ADD COLUMN expires_at timestamptz;

-- Process-wide switches shared by every ingress and worker through the database
-- (the processes share nothing else). key 'drain': workers stop claiming new work while present.
CREATE TABLE svc.daemon_state (
  key         text PRIMARY KEY,
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
