-- what retrieval gave a run: method asked, method used (hybrid without vectors serves bm25),
-- delivery, the query and the sources delivered
ALTER TABLE svc.invocations ADD COLUMN IF NOT EXISTS knowledge jsonb;
