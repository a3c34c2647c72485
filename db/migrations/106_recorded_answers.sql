-- Recorded model answers (issue 57, part 3): a pipeline with `record_answers: true` has the worker's
-- gateway keep the answers of its live runs' model calls, each task attempt's in call order, so a
-- backtest started with `replay_answers` answers its candidate from them instead of the model API.
-- Never the request's credential: its API path, target, the SHA-256 of its body as sent upstream;
-- the answer's status, the headers the gateway passed on and its body bytes as received (a stream
-- whole, to be replayed as the same stream), redacted like transcripts. Kept like transcripts
-- (workspaces.transcriptRetentionDays, worker/queue/retention.ts).
CREATE TABLE svc.recorded_answers (
  invocation_id   text NOT NULL REFERENCES svc.invocations (id) ON DELETE CASCADE,
  task_id         text NOT NULL,
  -- the call's place among the model calls of its task attempt, from 1
  call            integer NOT NULL,
  api             text NOT NULL CHECK (api IN ('anthropic', 'openai')),
  path            text NOT NULL,
  target          text NOT NULL,
  request_sha256  text NOT NULL,
  status          integer NOT NULL,
  headers         jsonb NOT NULL,
  body            bytea NOT NULL,
  -- false: the answer was cut before its end (it is replayed cut too)
  complete        boolean NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, call)
);
CREATE INDEX recorded_answers_invocation ON svc.recorded_answers (invocation_id);
CREATE INDEX recorded_answers_created ON svc.recorded_answers (created_at);

-- a backtest whose candidate runs are answered from the recorded answers of the live runs
ALTER TABLE svc.backtests ADD COLUMN replay_answers boolean NOT NULL DEFAULT false;

-- how the gateway answered each model call of a replaying run: from the recording with the same
-- request (replayed), with another request (diverged: the prompt differs), or past its end (missing)
CREATE TABLE svc.replayed_calls (
  invocation_id   text NOT NULL REFERENCES svc.invocations (id) ON DELETE CASCADE,
  task_id         text NOT NULL,
  call            integer NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('replayed', 'diverged', 'missing')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, call)
);
CREATE INDEX replayed_calls_invocation ON svc.replayed_calls (invocation_id);
