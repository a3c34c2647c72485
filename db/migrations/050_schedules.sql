-- One row per configured schedule (trigger.schedule): what `svc schedule list` shows beside the
-- configuration. The firing itself is exactly-once through the triggers' (source, delivery_id)
-- index: a tick is the trigger with source = the schedule name and delivery_id = its instant.
CREATE TABLE svc.schedules (
  name               text PRIMARY KEY,
  pipeline           text NOT NULL,
  cron               text NOT NULL,
  timezone           text NOT NULL,
  -- when a worker first ran this schedule with this cron and time zone: no tick before it is owed
  registered_at      timestamptz NOT NULL DEFAULT now(),
  -- the instant of the latest tick fired (not a run-now)
  last_scheduled_for timestamptz,
  -- the latest firing, tick or run-now, and the trigger it recorded
  last_run_at        timestamptz,
  last_trigger_id    text REFERENCES svc.triggers (id) ON DELETE SET NULL
);
