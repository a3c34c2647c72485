-- A shadow run (issue 57): the candidate version of a pipeline (its `shadow.version_file`), run beside
-- the live one on the same event, its outputs held back (outputs_held). The workload names the live
-- pipeline and the candidate's version; this says which of the two the worker runs.
ALTER TABLE svc.invocations ADD COLUMN shadow boolean NOT NULL DEFAULT false;
