-- Token usage (issue 26): the tokens an agent attempt's model calls used, as its runtime reported
-- them ({"input_tokens": n, "output_tokens": n}); null for a runtime that reports none (`command`)
-- and for tasks recorded before this migration. Eval statistics sum it per version × target.
ALTER TABLE svc.tasks ADD COLUMN IF NOT EXISTS usage jsonb;
