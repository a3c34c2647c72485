-- Notes in the database (release 0.10.0): written by agents through the `submit_note` tool or
-- imported from legacy notes files by `svc notes import`. Retention never deletes notes; the
-- source invocation is kept as a reference that outlives any cleanup of runs.

ALTER TABLE svc.notes RENAME COLUMN subject TO title;
ALTER TABLE svc.notes ADD COLUMN agent text;
ALTER TABLE svc.notes ADD COLUMN repo text;
ALTER TABLE svc.notes ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
-- sha256 of an imported file's content: a second import of the same file is skipped
ALTER TABLE svc.notes ADD COLUMN import_digest text;
CREATE UNIQUE INDEX notes_import_digest ON svc.notes (import_digest) WHERE import_digest IS NOT NULL;
CREATE INDEX notes_created ON svc.notes (created_at DESC, id);

ALTER TABLE svc.notes DROP CONSTRAINT notes_invocation_id_fkey;
ALTER TABLE svc.notes ADD CONSTRAINT notes_invocation_id_fkey
  FOREIGN KEY (invocation_id) REFERENCES svc.invocations(id) ON DELETE SET NULL;
