-- Dismissed findings (issue 56, part 5). A note has a kind: `note` (an agent's or an import's, as
-- before) or `dismissal`, a finding of svc's review that a member dismissed (resolved its thread
-- without changing its lines, or answered it "won't fix" / "false positive"): later reviews of the
-- repository drop the findings that match it (its fingerprint, or its rule on its path).
ALTER TABLE svc.notes ADD COLUMN kind text NOT NULL DEFAULT 'note' CHECK (kind IN ('note', 'dismissal'));
ALTER TABLE svc.notes ADD COLUMN path text;
ALTER TABLE svc.notes ADD COLUMN fingerprint text;
CREATE INDEX notes_dismissals ON svc.notes (repo) WHERE kind = 'dismissal';
-- Every review thread svc judged a dismissal, kept when its note is deleted: removing a suppression
-- must not bring it back from the same thread on the next review.
CREATE TABLE svc.dismissed_threads (
  thread_id text PRIMARY KEY,
  repo text NOT NULL,
  note_id text,
  judged_at timestamptz NOT NULL DEFAULT now()
);
