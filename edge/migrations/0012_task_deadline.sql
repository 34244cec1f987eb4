-- One deadline for approvers: with an outcome on expiry, `expires_at` is the approvers' deadline (shown and
-- enforced) and ringi answers the task after it, before Step Functions' own timeout `task_expires_at`.
-- NULL: the task's deadline is `expires_at` (no outcome on expiry).
ALTER TABLE approvals ADD COLUMN task_expires_at INTEGER;
