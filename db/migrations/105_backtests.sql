-- Backtests (issue 57): a candidate version of a pipeline replayed on the recorded events of merged
-- pull requests, each at the head it had then, its outputs held back, and its findings set against
-- what human reviewers and later commits touched. A backtest names the pipeline and the candidate
-- (its shadow version_file and the version that file declared); each item one pull request, the
-- recorded event replayed, the replay's own trigger, and the comparison once its run has ended.
CREATE TABLE svc.backtests (
  id                 text PRIMARY KEY,
  pipeline           text NOT NULL,
  version_file       text NOT NULL,
  candidate_version  text NOT NULL,
  live_version       text NOT NULL,
  -- what was asked for: { last } or { pulls }, and which recorded event of each pull request ran
  selection          jsonb NOT NULL,
  created_by         text,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX backtests_pipeline ON svc.backtests (pipeline, created_at DESC);

CREATE TABLE svc.backtest_items (
  backtest_id        text NOT NULL REFERENCES svc.backtests (id) ON DELETE CASCADE,
  repo               text NOT NULL,
  pull_number        integer NOT NULL,
  -- the recorded pull_request event that is replayed, and the held run's trigger replaying it
  replayed_trigger_id text REFERENCES svc.triggers (id) ON DELETE SET NULL,
  trigger_id         text REFERENCES svc.triggers (id) ON DELETE SET NULL,
  -- the head the pull request had at that event, and its last head when it was merged
  head_sha           text NOT NULL,
  final_head_sha     text NOT NULL,
  merged_at          timestamptz NOT NULL,
  -- computed once, after the run ended: findings and what they met (ingress/evals/backtest-compare.ts)
  comparison         jsonb,
  PRIMARY KEY (backtest_id, repo, pull_number)
);
CREATE INDEX backtest_items_trigger ON svc.backtest_items (trigger_id);

-- a backtest's replay: dispatch runs the pipeline named by `source` alone, as its shadow candidate
ALTER TABLE svc.triggers ADD COLUMN backtest_id text REFERENCES svc.backtests (id) ON DELETE SET NULL;
CREATE INDEX triggers_backtest ON svc.triggers (backtest_id) WHERE backtest_id IS NOT NULL;

-- a backtest's selection: the recorded pull_request deliveries of one pull request, found by its
-- repository and number (db/backtests.ts mergedPulls)
CREATE INDEX triggers_pull_request_events ON svc.triggers
  ((payload->'repository'->>'full_name'), (payload->'pull_request'->>'number'), created_at)
  WHERE kind = 'codehost' AND event_name LIKE 'pull_request.%';
