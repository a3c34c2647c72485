-- Evals (release after 0.12.0): every run remembers the pipeline version it ran, teams curate finished
-- invocations into eval cases, and an eval run replays curated cases through the pipeline as
-- configured now, so `GET /evals/compare` can set one version against another.

-- the `version` of the pipeline a workload ran (null for runs recorded before this migration)
ALTER TABLE svc.workloads ADD COLUMN IF NOT EXISTS pipeline_version text;
CREATE INDEX IF NOT EXISTS workloads_pipeline_version ON svc.workloads (pipeline, pipeline_version, created_at);

-- A curated case: what it needs is copied from the run (event, pipeline, version, target, outcome),
-- so it survives the retention of the trigger and invocation it came from.
CREATE TABLE svc.eval_cases (
  id                 text PRIMARY KEY,
  invocation_id      text REFERENCES svc.invocations (id) ON DELETE SET NULL,
  pipeline           text NOT NULL,
  pipeline_version   text,
  target             text,
  event_kind         text NOT NULL,
  event_source       text NOT NULL,
  event_name         text NOT NULL,
  payload            jsonb NOT NULL,
  -- what the run did: `pass` when the invocation completed, `fail` when it failed (agreement with
  -- the expectation also checks expected_result against result, at read time)
  observed           text NOT NULL CHECK (observed IN ('pass', 'fail')),
  observed_code      text,
  duration_ms        double precision,
  result             jsonb,
  -- what the team expected
  expected           text NOT NULL CHECK (expected IN ('pass', 'fail')),
  expected_result    jsonb,
  notes              text NOT NULL DEFAULT '',
  tags               text[] NOT NULL DEFAULT '{}',
  created_by         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX eval_cases_pipeline ON svc.eval_cases (pipeline, created_at DESC);
CREATE INDEX eval_cases_tags ON svc.eval_cases USING gin (tags);

-- One replay of curated cases through a pipeline; its triggers carry its id.
CREATE TABLE svc.eval_runs (
  id                 text PRIMARY KEY,
  pipeline           text NOT NULL,
  pipeline_version   text NOT NULL,
  created_by         text,
  created_at         timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE svc.triggers ADD COLUMN IF NOT EXISTS eval_run_id text REFERENCES svc.eval_runs (id) ON DELETE SET NULL;
CREATE INDEX IF NOT EXISTS triggers_eval_run ON svc.triggers (eval_run_id) WHERE eval_run_id IS NOT NULL;

-- which case each replay trigger re-fired
CREATE TABLE svc.eval_run_cases (
  eval_run_id  text NOT NULL REFERENCES svc.eval_runs (id) ON DELETE CASCADE,
  case_id      text NOT NULL REFERENCES svc.eval_cases (id) ON DELETE CASCADE,
  trigger_id   text NOT NULL REFERENCES svc.triggers (id) ON DELETE CASCADE,
  PRIMARY KEY (eval_run_id, case_id)
);
CREATE INDEX eval_run_cases_trigger ON svc.eval_run_cases (trigger_id);
