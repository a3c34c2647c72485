-- Findings recorded per run with their fate (issue 57, "judged by what people did"): each inline
-- finding a live review posted, and each one a shadow run would have posted (its held review),
-- with what became of it, read at the next review of the pull request from svc's review threads.
-- A live finding's `review_id` is the review it was posted in and `comment_id` the comment that
-- carries it (known once a later review lists the pull request's comments); a shadow's has
-- neither. `fate`: open; resolved_with_change (its thread resolved after its lines changed);
-- dismissed (a member resolved it unchanged or answered "won't fix"); thumbed_down. A shadow
-- finding's fate is never set here: it takes the fate of the live finding on the same lines of the
-- same event (db/review-findings.ts).
CREATE TABLE svc.review_findings (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  invocation_id text NOT NULL REFERENCES svc.invocations(id) ON DELETE CASCADE,
  pipeline      text NOT NULL,
  version       text,
  shadow        boolean NOT NULL,
  repo          text NOT NULL,
  pull_number   integer NOT NULL,
  output_key    text NOT NULL,
  path          text NOT NULL,
  start_line    integer NOT NULL,
  end_line      integer NOT NULL,
  fingerprint   text,
  rule          text NOT NULL,
  review_id     text,
  comment_id    text,
  fate          text NOT NULL DEFAULT 'open'
                CHECK (fate IN ('open', 'resolved_with_change', 'dismissed', 'thumbed_down')),
  fate_reason   text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
-- a retried publish or hold records each finding of the run once
CREATE UNIQUE INDEX review_findings_once
  ON svc.review_findings (invocation_id, output_key, path, end_line, fingerprint) NULLS NOT DISTINCT;
-- the fate update finds svc's live findings on a pull request by fingerprint
CREATE INDEX review_findings_pull ON svc.review_findings (repo, pull_number, fingerprint) WHERE NOT shadow;
CREATE INDEX review_findings_pipeline ON svc.review_findings (pipeline, shadow);
