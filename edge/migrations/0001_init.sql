-- ringi storage (design.md §7). Times are Unix milliseconds.
CREATE TABLE approvals (
  id            TEXT PRIMARY KEY,
  task_token    TEXT,                 -- NULL once the task is answered or closed: kept only while needed
  token_sha256  TEXT NOT NULL,        -- fingerprint for idempotent re-registration, survives the token
  status        TEXT NOT NULL CHECK (status IN ('pending', 'claimed', 'approved', 'rejected', 'expired')),
  title         TEXT NOT NULL,
  summary       TEXT NOT NULL DEFAULT '',
  details_json  TEXT NOT NULL DEFAULT '{}',
  form_json     TEXT NOT NULL DEFAULT '[]',
  quorum        TEXT NOT NULL DEFAULT 'any',
  approver_count INTEGER NOT NULL,
  context_json  TEXT NOT NULL DEFAULT '{}',
  notify_json   TEXT NOT NULL DEFAULT '[]',
  locale        TEXT,
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  claim_id      TEXT,                 -- holder of the current claim (random per attempt)
  claimed_until INTEGER,              -- lease end: a claim whose holder died frees itself
  decided_at    INTEGER,
  decision      TEXT,
  mail_state    TEXT NOT NULL DEFAULT 'none' CHECK (mail_state IN ('none', 'pending', 'sent', 'failed')),
  mail_attempts INTEGER NOT NULL DEFAULT 0,
  reminded_at   INTEGER
);
CREATE INDEX approvals_status_expires ON approvals (status, expires_at);

CREATE TABLE approval_principals (
  approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  kind        TEXT NOT NULL CHECK (kind IN ('sub', 'email', 'group')),
  value       TEXT NOT NULL,
  pkey        TEXT NOT NULL,              -- kind || ':' || value, what the inbox looks up
  open        INTEGER NOT NULL DEFAULT 1, -- 1 while the approval is pending (denormalized for the inbox)
  sort_at     INTEGER NOT NULL,           -- expires_at while open, decided_at once closed
  PRIMARY KEY (approval_id, kind, value)
);
-- The inbox: the caller's principals → open/closed approvals in expiry/decision order, without a scan.
CREATE INDEX approval_principals_inbox ON approval_principals (pkey, open, sort_at, approval_id);

-- The audit trail: one row per approver decision (quorum progress counts these).
CREATE TABLE decisions (
  approval_id   TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  sub           TEXT NOT NULL,
  principal     TEXT NOT NULL,
  email         TEXT,
  username      TEXT,
  decision      TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
  comment       TEXT,
  feedback_json TEXT,
  at            INTEGER NOT NULL,
  PRIMARY KEY (approval_id, sub)
);
