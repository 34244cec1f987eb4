-- Who registered an approval, as authenticated (an API key's label or a client id), shown to approvers
-- apart from the registrant's free-text context; and a per-credential counter that rate-limits registrations.
ALTER TABLE approvals ADD COLUMN registered_by TEXT;
CREATE TABLE registration_rate (
  credential   TEXT NOT NULL,
  window_start INTEGER NOT NULL,   -- Unix ms, the minute the count belongs to
  count        INTEGER NOT NULL,
  PRIMARY KEY (credential, window_start)
);
