-- Web Push (core::adapters::webpush, design.md §9 "Push"): the browsers' push subscriptions, per signed-in person
-- (by verified `sub`; several devices each), with the verified email and groups of the token the device
-- subscribed with (approvals name people by email and group too). The endpoint is a capability: it is stored
-- here and posted to, never logged, never in an event (events and logs name `device`, 16 hex digits of its
-- SHA-256).
CREATE TABLE push_subscriptions (
  device      TEXT PRIMARY KEY,            -- webpush::endpoint_hash(endpoint)
  endpoint    TEXT NOT NULL,
  sub         TEXT NOT NULL,
  email       TEXT,                        -- lower case; NULL when the token carried no verified email
  groups_json TEXT NOT NULL DEFAULT '[]',
  p256dh      TEXT NOT NULL,               -- base64url, 65 bytes
  auth        TEXT NOT NULL,               -- base64url, 16 bytes
  lang        TEXT NOT NULL DEFAULT 'en',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_sub ON push_subscriptions (sub);
CREATE INDEX push_subscriptions_email ON push_subscriptions (email) WHERE email IS NOT NULL;

-- The outbox: a message (`kind`: request, reminder, escalation, handover) of an approval to one device, put here
-- as the devices are looked up (pending) and taken out when the push service answered; what failed (or whose
-- sender died) is retried by the cron like the request mail, at most 5 attempts.
CREATE TABLE push_outbox (
  approval_id TEXT NOT NULL,
  device      TEXT NOT NULL,
  kind        TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'failed')),
  attempts    INTEGER NOT NULL DEFAULT 0,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (approval_id, device, kind)
);
CREATE INDEX push_outbox_due ON push_outbox (updated_at);
