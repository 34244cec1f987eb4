-- Reminders and escalation on a schedule (core::schedule): one row per reminder and one for the
-- escalation, written with the registration. The cron takes due rows under a lease (concurrent runs take
-- different rows), mails, then marks the row done; a mark that fails is redone after the lease, at the cost
-- of at most one extra mail. An approval with its own `reminders` gets `reminded_at = created_at` at insert,
-- which turns the default reminder before expiry off.
CREATE TABLE approval_schedule (
  approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,                -- reminders in time order, then the escalation
  kind        TEXT NOT NULL CHECK (kind IN ('reminder', 'escalation')),
  due_at      INTEGER NOT NULL,                -- Unix ms
  detail_json TEXT NOT NULL DEFAULT '{}',      -- the escalation: {"to": [principals], "note"}
  lease_id    TEXT,                            -- the cron run working on it
  lease_until INTEGER,
  done_at     INTEGER,                         -- NULL while due
  outcome     TEXT CHECK (outcome IN ('sent', 'skipped')),
  PRIMARY KEY (approval_id, seq)
);
-- The cron's due rows without a scan of the done ones.
CREATE INDEX approval_schedule_due ON approval_schedule (due_at) WHERE done_at IS NULL;
-- When the escalation principals were added (the inbox marks escalated approvals).
ALTER TABLE approvals ADD COLUMN escalated_at INTEGER;
