-- Orchestrated execution (docs/worker.md): an orchestrator run creates tasks that any worker claims
-- from the pipeline's lanes. Such a task is a row of svc.tasks (kind `agent`) with a `spec`; it is
-- held and heartbeated like an invocation, so a lost worker leaves it retried or failed.
ALTER TABLE svc.tasks DROP CONSTRAINT IF EXISTS tasks_status_check;
ALTER TABLE svc.tasks ADD CONSTRAINT tasks_status_check
  CHECK (status IN ('pending','queued','running','completed','failed','skipped','cancelled'));
-- what the orchestrator asked for: instructions, skill, principal, inputs (null for a run's own tasks)
ALTER TABLE svc.tasks ADD COLUMN spec jsonb;
-- the orchestrator's agent task that created it: the trace draws the tree from this
ALTER TABLE svc.tasks ADD COLUMN parent_id text REFERENCES svc.tasks(id);
ALTER TABLE svc.tasks ADD COLUMN target text;
ALTER TABLE svc.tasks ADD COLUMN result jsonb;
ALTER TABLE svc.tasks ADD COLUMN worker_id text;
ALTER TABLE svc.tasks ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE svc.tasks ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE svc.tasks ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX tasks_orchestrated_running ON svc.tasks (heartbeat_at) WHERE status = 'running' AND spec IS NOT NULL;
