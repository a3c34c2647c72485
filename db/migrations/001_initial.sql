-- svc schema. Operators query these tables directly: column names are stable API.
CREATE SCHEMA IF NOT EXISTS svc;

CREATE TABLE svc.triggers (
  id           text PRIMARY KEY,
  kind         text NOT NULL CHECK (kind IN ('webhook','codehost','tracker','manual','schedule','replay')),
  source       text NOT NULL,
  event_name   text NOT NULL,
  delivery_id  text,
  status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','error','discarded')),
  diagnostic   jsonb,
  payload      jsonb NOT NULL,
  -- who fired it (api token name) for manual/replay triggers; null for webhooks
  owner        text,
  replay_of    text REFERENCES svc.triggers(id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
-- redeliveries of one delivery id from one source answer with the first trigger
CREATE UNIQUE INDEX triggers_source_delivery ON svc.triggers (source, delivery_id) WHERE delivery_id IS NOT NULL;
CREATE INDEX triggers_created_at ON svc.triggers (created_at DESC, id DESC);
CREATE INDEX triggers_status ON svc.triggers (status, created_at DESC);
CREATE INDEX triggers_diagnostic_code ON svc.triggers ((diagnostic->>'code')) WHERE diagnostic IS NOT NULL;
CREATE INDEX triggers_id_pattern ON svc.triggers (id text_pattern_ops);

CREATE TABLE svc.workloads (
  id          text PRIMARY KEY,
  trigger_id  text REFERENCES svc.triggers(id),
  pipeline    text NOT NULL,
  owner       text,
  status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open','running','completed','error','discarded','closed')),
  workspace   text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workloads_trigger ON svc.workloads (trigger_id);
CREATE INDEX workloads_owner ON svc.workloads (owner);
CREATE INDEX workloads_id_pattern ON svc.workloads (id text_pattern_ops);

CREATE TABLE svc.invocations (
  id           text PRIMARY KEY,
  workload_id  text NOT NULL REFERENCES svc.workloads(id),
  status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled')),
  diagnostic   jsonb,
  target       text,
  attempts     integer NOT NULL DEFAULT 0,
  result       jsonb,
  -- the worker holding the run and its last heartbeat: a stale heartbeat means the worker is gone
  worker_id    text,
  heartbeat_at timestamptz,
  started_at   timestamptz,
  finished_at  timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invocations_workload ON svc.invocations (workload_id);
CREATE INDEX invocations_running ON svc.invocations (heartbeat_at) WHERE status = 'running';
CREATE INDEX invocations_id_pattern ON svc.invocations (id text_pattern_ops);

CREATE TABLE svc.tasks (
  id             text PRIMARY KEY,
  invocation_id  text NOT NULL REFERENCES svc.invocations(id),
  kind           text NOT NULL CHECK (kind IN ('setup','agent','result_check','output')),
  name           text NOT NULL,
  seq            integer NOT NULL,
  status         text NOT NULL DEFAULT 'running' CHECK (status IN ('running','completed','failed','skipped')),
  exit_code      integer,
  diagnostic     jsonb,
  started_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz
);
CREATE INDEX tasks_invocation ON svc.tasks (invocation_id, seq);
CREATE INDEX tasks_id_pattern ON svc.tasks (id text_pattern_ops);

CREATE TABLE svc.artifacts (
  id             text PRIMARY KEY,
  invocation_id  text NOT NULL REFERENCES svc.invocations(id),
  task_id        text REFERENCES svc.tasks(id),
  name           text NOT NULL,
  media_type     text NOT NULL,
  size           bigint NOT NULL,
  path           text,
  -- rendered text for display (truncated for large binaries); the file at path is the source of truth
  rendered       text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (invocation_id, name)
);

CREATE TABLE svc.notes (
  id             text PRIMARY KEY,
  invocation_id  text REFERENCES svc.invocations(id),
  pipeline       text,
  subject        text,
  body           text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE svc.credential_cooldowns (
  target      text NOT NULL,
  credential  text NOT NULL,
  state       text NOT NULL CHECK (state IN ('cooling','dead')),
  reason      text NOT NULL,
  until       timestamptz,
  dead_at     timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (target, credential)
);

CREATE TABLE svc.secrets (
  name        text PRIMARY KEY,
  -- AES-256-GCM under the instance key: iv (12 bytes) | tag (16 bytes) | ciphertext
  ciphertext  bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE svc.api_tokens (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  -- sha256 of the token; the token itself is printed once and never stored
  token_hash  bytea NOT NULL UNIQUE,
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
