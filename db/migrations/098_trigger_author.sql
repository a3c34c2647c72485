-- GitLab's webhook payloads carry no access level of the user who wrote an event, so the worker
-- asks GitLab's members API once, at dispatch, and keeps the answer on the trigger (issue 53): a
-- run, a retry and a replay then judge the author as its dispatch did. NULL: not looked up (a
-- GitHub delivery states its author itself), or GitLab could not say, which counts as a stranger.
ALTER TABLE svc.triggers ADD COLUMN author_association text
  CHECK (author_association IN ('owner','member','none'));
