-- The callback attempt that may have reached Step Functions, recorded by the claim itself (same UPDATE),
-- and whether the final verdict was confirmed by Step Functions (200). `approvals.status` keeps its CHECK
-- constraint: rebuilding the table would cascade-delete the child rows in D1. "Decided, unconfirmed" is
-- status 'approved'/'rejected' with confirmed = 0 (core: ApprovalStatus::from_stored).
ALTER TABLE approvals ADD COLUMN attempt_id TEXT;       -- claim id of the earliest possibly-delivered attempt
ALTER TABLE approvals ADD COLUMN attempt_verdict TEXT CHECK (attempt_verdict IN ('approve', 'reject'));
ALTER TABLE approvals ADD COLUMN attempt_sub TEXT;      -- who sent it
ALTER TABLE approvals ADD COLUMN attempt_by TEXT;       -- their email / user name, for display
ALTER TABLE approvals ADD COLUMN attempt_at INTEGER;
ALTER TABLE approvals ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1 CHECK (confirmed IN (0, 1));
