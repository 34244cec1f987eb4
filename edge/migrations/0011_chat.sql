-- Chat notifications (core::chat): the channels a registration's `notify` named (configured names from
-- CHAT_CHANNELS, never URLs), the ones still to be posted to, and where their delivery stands — sent after the
-- registration's response and retried by the cron like the request mail (`mail_state`).
ALTER TABLE approvals ADD COLUMN chat_json TEXT NOT NULL DEFAULT '[]';      -- channel names, as registered
ALTER TABLE approvals ADD COLUMN chat_due_json TEXT NOT NULL DEFAULT '[]';  -- channel names not delivered yet
ALTER TABLE approvals ADD COLUMN chat_state TEXT NOT NULL DEFAULT 'none'
  CHECK (chat_state IN ('none', 'pending', 'sent', 'failed'));
ALTER TABLE approvals ADD COLUMN chat_attempts INTEGER NOT NULL DEFAULT 0;
-- The cron's look-up of deliveries to retry reads only approvals with one open.
CREATE INDEX approvals_chat_due ON approvals (created_at) WHERE chat_state IN ('pending', 'failed');
