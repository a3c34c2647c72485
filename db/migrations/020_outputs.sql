-- Outputs: one row per published output of an invocation, and one circuit breaker per pipeline.

-- An output delivery: `pending` until the code host or chat API answered with the object it
-- created (`sent`, with its id and URL) or refused it for good (`failed`). A retry first looks for
-- the hidden marker of (invocation_id, output_key) on the target, so nothing is posted twice.
CREATE TABLE svc.output_deliveries (
  invocation_id  text NOT NULL REFERENCES svc.invocations(id) ON DELETE CASCADE,
  output_key     text NOT NULL,
  handler        text NOT NULL,
  status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  remote_id      text,
  remote_url     text,
  attempts       integer NOT NULL DEFAULT 0,
  last_error     text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (invocation_id, output_key)
);

-- A pipeline's circuit breaker: consecutive failed invocations; `open_until` in the future means
-- its new invocations wait. Opening resets the count, so a closed breaker needs as many failures again.
CREATE TABLE svc.circuit_breakers (
  pipeline              text PRIMARY KEY,
  consecutive_failures  integer NOT NULL DEFAULT 0,
  opened_at             timestamptz,
  open_until            timestamptz,
  updated_at            timestamptz NOT NULL DEFAULT now()
);
