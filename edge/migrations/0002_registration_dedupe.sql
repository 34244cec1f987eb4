-- One task token, one approval: a redelivered registration (EventBridge delivers at least once) finds the
-- approval it created instead of making a second one. `request_sha256` tells a redelivery (same request)
-- from a different request for the same task (refused).
ALTER TABLE approvals ADD COLUMN request_sha256 TEXT;
CREATE UNIQUE INDEX approvals_token ON approvals (token_sha256);
