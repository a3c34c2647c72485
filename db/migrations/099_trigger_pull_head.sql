-- A comment on a GitHub pull request (issue_comment) states no head commit, so a command such as
-- "@svc review" would check out and review whatever the branch held when the run got to it. The
-- worker asks GitHub for the pull request's head and base once, at dispatch, and keeps the answer on
-- the trigger (issue 55): the run, its retries and replays check out, judge (a fork's head is an
-- outsider's) and publish against that one commit. NULL: not looked up, or GitHub could not say.
ALTER TABLE svc.triggers ADD COLUMN pull_head jsonb;
