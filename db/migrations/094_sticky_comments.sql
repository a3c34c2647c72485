-- Sticky comments (issue 44): one comment per pipeline, pull request and output key, edited on
-- every run instead of posted again. The row is what makes an edit exactly once: once the comment
-- exists its id is here, so a lost answer is retried as an edit of this id, never as a new comment.
-- `invocation_id` is the run that wrote it last and `state` what it wrote: `progress` (the run had
-- started), `result` (its output), `ended` (one line on how a run that published nothing ended).
CREATE TABLE svc.sticky_comments (
  pipeline       text NOT NULL,
  repo           text NOT NULL,
  number         integer NOT NULL,
  output_key     text NOT NULL,
  comment_id     text NOT NULL,
  comment_url    text,
  invocation_id  text REFERENCES svc.invocations(id) ON DELETE SET NULL,
  state          text NOT NULL CHECK (state IN ('progress', 'result', 'ended')),
  -- the commit the last write was about, named again in the line a run's end writes
  sha            text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pipeline, repo, number, output_key)
);
-- a run's end finds the comments it left saying "in progress"
CREATE INDEX sticky_comments_invocation ON svc.sticky_comments (invocation_id);
-- a review comment is svc's own when its review is one svc delivered (findings never posted twice)
CREATE INDEX output_deliveries_reviews ON svc.output_deliveries (remote_id) WHERE handler = 'codehost.review';
