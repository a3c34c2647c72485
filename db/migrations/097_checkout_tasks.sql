-- A run's checkout is a task of its own (issue 52): the trace shows what was checked out, from
-- the worker host's repository mirror or by a cold fetch, and the bytes the code host sent.
ALTER TABLE svc.tasks DROP CONSTRAINT tasks_kind_check;
ALTER TABLE svc.tasks ADD CONSTRAINT tasks_kind_check
  CHECK (kind IN ('checkout','setup','agent','result_check','output'));
