-- A run whose outputs are held back (issue 54, `svc doctor --deep --fire`; later shadow versions):
-- it runs like any other, and what it would have posted is recorded as its artifact instead of
-- being published. The request is the trigger's (`hold_outputs`), the fact the invocation's
-- (`outputs_held`), so a run is held whichever way it was created and a retry holds it again.
ALTER TABLE svc.triggers ADD COLUMN hold_outputs boolean NOT NULL DEFAULT false;
ALTER TABLE svc.invocations ADD COLUMN outputs_held boolean NOT NULL DEFAULT false;
