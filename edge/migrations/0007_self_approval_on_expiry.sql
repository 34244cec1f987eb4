-- Separation of duty: who asked for the approval (principal keys `sub:…` / `email:…`, a JSON array). They may
-- see it but neither vote nor take the claim, unless allow_self_approval = 1 (core::self_approval).
ALTER TABLE approvals ADD COLUMN requested_by_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE approvals ADD COLUMN allow_self_approval INTEGER NOT NULL DEFAULT 0 CHECK (allow_self_approval IN (0, 1));
-- A chosen outcome when nobody decides (core::on_expiry): 'none' leaves it to Step Functions' TimeoutSeconds;
-- 'reject' / 'approve' make the cron answer the task itself shortly before expires_at.
ALTER TABLE approvals ADD COLUMN on_expiry TEXT NOT NULL DEFAULT 'none' CHECK (on_expiry IN ('none', 'reject', 'approve'));
-- The verdict is ringi's own on expiry (its attempt is the one with attempt_sub NULL), not a person's.
ALTER TABLE approvals ADD COLUMN decided_on_expiry INTEGER NOT NULL DEFAULT 0 CHECK (decided_on_expiry IN (0, 1));
-- The cron's look-up of approvals whose chosen outcome is due: only open ones with an outcome to deliver.
CREATE INDEX approvals_on_expiry_due ON approvals (expires_at)
  WHERE on_expiry != 'none' AND status IN ('pending', 'claimed');
