-- Concurrency groups and incremental reviews (issue 44). An invocation of a pipeline with
-- `concurrency:` carries its group's key; dispatch, the claim and a run's end decide over the
-- invocations of one key (under an advisory lock on it), so the group's holder is always read from
-- the invocations' own statuses, never from a flag a crashed worker could leave set.
ALTER TABLE svc.invocations ADD COLUMN concurrency_group text;
-- the revision the invocation's event names: a later run of the group reviews what changed since
-- the head of the last one that completed (PREVIOUS_SHA)
ALTER TABLE svc.invocations ADD COLUMN head_sha text;
-- the open invocations of a group (its holder and its waiting one), and its last completed one
CREATE INDEX invocations_concurrency_group ON svc.invocations (concurrency_group, created_at DESC)
  WHERE concurrency_group IS NOT NULL;
-- never two running invocations in one group, whatever path a bug might take: the locks make it
-- so, and this makes a violation an error instead of two reviews of one pull request at once
CREATE UNIQUE INDEX invocations_one_running_per_group ON svc.invocations (concurrency_group)
  WHERE status = 'running' AND concurrency_group IS NOT NULL;
