-- Results kept so far (issue 56, part 2): the last result an agent of a review pipeline kept with
-- the `keep_result_so_far` tool, on its agent task, each call replacing the one before. Already
-- checked against the pipeline's result.schema; published, marked incomplete, only when the agent
-- is stopped at its turn or time limit (worker/run/partial.ts). Null: nothing kept.
ALTER TABLE svc.tasks ADD COLUMN IF NOT EXISTS kept_result jsonb;
