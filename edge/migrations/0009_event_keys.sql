-- Idempotent events: every insert carries a key (deterministic for events that happen once, e.g. an
-- approver's first view; random per statement otherwise), so that a retried batch — its first answer
-- lost — does not record an event twice (INSERT OR IGNORE on this index).
ALTER TABLE approval_events ADD COLUMN dedupe_key TEXT;
CREATE UNIQUE INDEX approval_events_dedupe ON approval_events (dedupe_key);
