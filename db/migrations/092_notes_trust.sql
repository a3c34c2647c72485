-- Notes per repository and trust (issue 42). A note submitted by a run whose event came from
-- outside the repository's team (a fork's pull request, a non-member author) is stored untrusted:
-- no other run is given it until an operator trusts it (`svc notes trust`, PATCH /notes/:id).
-- Every note written before this migration keeps its repo and is trusted, as it was read before.
ALTER TABLE svc.notes ADD COLUMN trusted boolean NOT NULL DEFAULT true;
-- the operator who last set `trusted`, and when: null while nobody has
ALTER TABLE svc.notes ADD COLUMN trust_decided_by text;
ALTER TABLE svc.notes ADD COLUMN trust_decided_at timestamptz;
-- a run reads its repository's notes and the team's (repo null)
CREATE INDEX notes_repo ON svc.notes (repo, created_at DESC);
