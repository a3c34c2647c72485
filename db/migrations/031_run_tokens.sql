-- Run tokens: the token an agent run gets is bound to its invocation, and carries what tools need
-- to act for that run (pipeline, agent, repo, worktree), so the ingress looks nothing else up.
ALTER TABLE svc.api_tokens ADD COLUMN run jsonb;
