-- Delegation, out-of-office routing and reassignment (core::delegation). A listed principal's slot can be
-- handed on: the row that hands it on keeps its place (its holder still sees the approval, as delegated)
-- and names the next holder in `delegated_to`; the next holder gets a row of its own that stands in for
-- the listed principal (`slot`). Only rows with `delegated_to IS NULL` decide, and a vote through a row
-- records its slot (`decisions.principal`), so the quorum still counts listed principals.
ALTER TABLE approval_principals ADD COLUMN slot TEXT;           -- listed principal's key this row stands in for; NULL: listed itself
ALTER TABLE approval_principals ADD COLUMN depth INTEGER NOT NULL DEFAULT 0; -- hand-overs between the listed principal and this row
ALTER TABLE approval_principals ADD COLUMN delegated_to TEXT;   -- key of the principal this row handed its slot to; NULL: holds it
ALTER TABLE approval_principals ADD COLUMN delegated_by TEXT;   -- who handed the slot to this row (display)
ALTER TABLE approval_principals ADD COLUMN note TEXT;           -- their note to this row's principal
ALTER TABLE approval_principals ADD COLUMN routed INTEGER NOT NULL DEFAULT 0 CHECK (routed IN (0, 1)); -- handed over by out-of-office routing
-- "Send my approvals to X from … until …", keyed by the verified sub; the verified email (lower case) when it
-- was set, so that approvals naming the person by email are routed too.
CREATE TABLE out_of_office (
  sub        TEXT PRIMARY KEY,
  email      TEXT,
  delegate   TEXT NOT NULL,       -- principal key (core::principal::Principal::key)
  starts_at  INTEGER NOT NULL,    -- Unix ms
  ends_at    INTEGER NOT NULL,
  note       TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX out_of_office_email ON out_of_office (email);
