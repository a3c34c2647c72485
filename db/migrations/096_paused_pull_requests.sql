-- Pull requests paused by a comment command (`@svc pause`, issue 45): while a row is here, the
-- pull request's events start no automatic run (their trigger ends `completed`, diagnostic
-- `paused`); `@svc resume` deletes it. Command pipelines are not paused.
CREATE TABLE svc.paused_pull_requests (
  repo       text NOT NULL,
  number     integer NOT NULL,
  -- the login that paused it, for `svc trigger show` readers asking who
  paused_by  text,
  paused_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, number)
);
