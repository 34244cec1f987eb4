-- The append-only event log (core::audit). Not tied to approvals by a foreign key: events outlive the
-- approval's row (purged after its own retention) and are removed only by the audit retention.
CREATE TABLE approval_events (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT, -- order within the same millisecond; the export cursor
  approval_id  TEXT NOT NULL,
  at           INTEGER NOT NULL,                  -- Unix ms
  kind         TEXT NOT NULL,                     -- core::audit::EventKind
  actor        TEXT NOT NULL,                     -- core::audit::Actor::key
  actor_display TEXT,
  detail_json  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX approval_events_approval ON approval_events (approval_id, seq);
CREATE INDEX approval_events_at ON approval_events (at, seq);
-- Append-only: an event is never rewritten (retention deletes whole old events).
CREATE TRIGGER approval_events_append_only BEFORE UPDATE ON approval_events
BEGIN
  SELECT RAISE(ABORT, 'approval_events is append-only');
END;
