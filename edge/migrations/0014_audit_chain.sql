-- The hash chain of each approval's events (core::domain::audit_chain): an event is sealed into its approval's
-- chain right after it is written — its position `chain_n` (from 1), the digest of the event before it and its
-- own digest. Events written before this migration are marked `chain_n = 0`: unchained, and reported as
-- written before the chain began (not as tampering). NULL: written, not sealed yet.
DROP TRIGGER approval_events_append_only;
ALTER TABLE approval_events ADD COLUMN chain_n INTEGER;
ALTER TABLE approval_events ADD COLUMN prev_digest TEXT;
ALTER TABLE approval_events ADD COLUMN digest TEXT;
UPDATE approval_events SET chain_n = 0;
-- One event per place in a chain: a seal that lost a race can never fork it.
CREATE UNIQUE INDEX approval_events_chain ON approval_events (approval_id, chain_n) WHERE chain_n > 0;
-- The events still to seal, in the order they were written.
CREATE INDEX approval_events_unsealed ON approval_events (seq) WHERE chain_n IS NULL;
-- Still append-only: an event is never rewritten; the one change allowed is its seal, once.
CREATE TRIGGER approval_events_append_only BEFORE UPDATE ON approval_events
WHEN OLD.chain_n IS NOT NULL
  OR NEW.seq IS NOT OLD.seq OR NEW.approval_id IS NOT OLD.approval_id OR NEW.at IS NOT OLD.at
  OR NEW.kind IS NOT OLD.kind OR NEW.actor IS NOT OLD.actor OR NEW.actor_display IS NOT OLD.actor_display
  OR NEW.detail_json IS NOT OLD.detail_json OR NEW.dedupe_key IS NOT OLD.dedupe_key
BEGIN
  SELECT RAISE(ABORT, 'approval_events is append-only (an event is sealed into its chain once)');
END;
