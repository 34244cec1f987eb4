//! Web Push's D1 statements (`crate::adapters::webpush`): a device's subscription (at most
//! `webpush::MAX_DEVICES` per person), the devices an approval's principals reach ([`PushTargets::reach`] as
//! SQL), and the outbox a delivery and the cron's retries go through. `tests/sql_push.rs` runs them on SQLite
//! over the real migrations.

use super::{SqlArg, SqlCond};
use crate::adapters::webpush::{PushOutcome, PushTargets, MAX_DEVICES};

fn json_list(v: &[String]) -> SqlArg {
    SqlArg::Text(serde_json::to_string(v).unwrap_or_else(|_| "[]".into()))
}

/// The subscriptions [`PushTargets::reach`]es: by `sub`, by the verified email, by a group the token named.
/// Parameters ?1 subs, ?2 emails, ?3 groups (JSON arrays).
const REACH: &str = "(sub IN (SELECT value FROM json_each(?1)) OR email IN (SELECT value FROM json_each(?2))
     OR EXISTS (SELECT 1 FROM json_each(push_subscriptions.groups_json) g
       WHERE g.value IN (SELECT value FROM json_each(?3))))";

fn reach_args(t: &PushTargets) -> Vec<SqlArg> {
    let emails: Vec<String> = t.emails.iter().map(|e| e.to_ascii_lowercase()).collect();
    vec![json_list(&t.subs), json_list(&emails), json_list(&t.groups)]
}

/// A device stored for one person.
pub struct NewDevice<'a> {
    pub device: &'a str,
    pub endpoint: &'a str,
    pub sub: &'a str,
    pub email: Option<&'a str>,
    pub groups: &'a [String],
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub lang: &'a str,
    pub now: i64,
}

/// Stores (or replaces, by endpoint: the browser's subscription belongs to whoever subscribed on it last) a
/// device, unless its person has [`MAX_DEVICES`] others already: no row changed then.
pub fn subscribe(d: &NewDevice<'_>) -> SqlCond {
    SqlCond {
        sql: format!(
            "INSERT INTO push_subscriptions (device, endpoint, sub, email, groups_json, p256dh, auth, lang, created_at,
               updated_at)
             SELECT ?1, ?2, ?3, lower(?4), ?5, ?6, ?7, ?8, ?9, ?9
             WHERE (SELECT COUNT(*) FROM push_subscriptions WHERE sub = ?3 AND device != ?1) < {MAX_DEVICES}
             ON CONFLICT (device) DO UPDATE SET endpoint = excluded.endpoint, sub = excluded.sub,
               email = excluded.email, groups_json = excluded.groups_json, p256dh = excluded.p256dh,
               auth = excluded.auth, lang = excluded.lang, updated_at = excluded.updated_at"
        ),
        args: vec![
            d.device.into(),
            d.endpoint.into(),
            d.sub.into(),
            SqlArg::opt(d.email),
            json_list(d.groups),
            d.p256dh.into(),
            d.auth.into(),
            d.lang.into(),
            SqlArg::Int(d.now),
        ],
    }
}

/// Removes one person's device (never another's) and what its outbox still held.
pub fn unsubscribe(sub: &str, device: &str) -> [SqlCond; 2] {
    [
        SqlCond {
            sql: "DELETE FROM push_outbox WHERE device = ?1 AND EXISTS (SELECT 1 FROM push_subscriptions
                    WHERE device = ?1 AND sub = ?2)"
                .into(),
            args: vec![device.into(), sub.into()],
        },
        SqlCond {
            sql: "DELETE FROM push_subscriptions WHERE device = ?1 AND sub = ?2".into(),
            args: vec![device.into(), sub.into()],
        },
    ]
}

/// Devices one message goes to at most.
pub const DEVICES_MAX: i64 = 100;

/// The devices `t` reaches, put in the outbox for (`id`, `kind`) as pending (one already there stays as it is),
/// then read: one batch.
pub fn due(id: &str, kind: &str, t: &PushTargets, now: i64) -> [SqlCond; 2] {
    let mut insert_args = reach_args(t);
    insert_args.extend([id.into(), kind.into(), SqlArg::Int(now)]);
    [
        SqlCond {
            sql: format!(
                "INSERT OR IGNORE INTO push_outbox (approval_id, device, kind, state, attempts, updated_at)
                 SELECT ?4, device, ?5, 'pending', 0, ?6 FROM push_subscriptions WHERE {REACH}
                 ORDER BY device LIMIT {DEVICES_MAX}"
            ),
            args: insert_args,
        },
        SqlCond {
            sql: format!(
                "SELECT device, endpoint, p256dh, auth FROM push_subscriptions WHERE {REACH}
                 ORDER BY device LIMIT {DEVICES_MAX}"
            ),
            args: reach_args(t),
        },
    ]
}

/// What one device's answer does to the outbox (and the subscription): delivered and refused leave it; a
/// retry stays, failed, one attempt more; gone drops the subscription with everything queued for it.
pub fn done(id: &str, kind: &str, device: &str, outcome: PushOutcome, now: i64) -> Vec<SqlCond> {
    let key = || vec![SqlArg::from(id), device.into(), kind.into()];
    match outcome {
        PushOutcome::Delivered | PushOutcome::Refused => vec![SqlCond {
            sql: "DELETE FROM push_outbox WHERE approval_id = ?1 AND device = ?2 AND kind = ?3".into(),
            args: key(),
        }],
        PushOutcome::Retry => {
            let mut args = key();
            args.push(SqlArg::Int(now));
            vec![SqlCond {
                sql: "UPDATE push_outbox SET state = 'failed', attempts = attempts + 1, updated_at = ?4
                      WHERE approval_id = ?1 AND device = ?2 AND kind = ?3"
                    .into(),
                args,
            }]
        }
        PushOutcome::Gone => vec![
            SqlCond { sql: "DELETE FROM push_outbox WHERE device = ?1".into(), args: vec![device.into()] },
            SqlCond { sql: "DELETE FROM push_subscriptions WHERE device = ?1".into(), args: vec![device.into()] },
        ],
    }
}

/// Outbox entries a cron run retries at most.
pub const RETRY_BATCH: i64 = 50;

/// The cron's retries: first what can never be sent any more goes (given up after `max_attempts`, or its
/// approval closed); then the entries failed, or pending since before `gone_before` (their sender died), of
/// open approvals, with their devices (at most [`RETRY_BATCH`]).
pub fn retries(now: i64, max_attempts: i64, gone_before: i64) -> [SqlCond; 2] {
    [
        SqlCond {
            sql: "DELETE FROM push_outbox WHERE attempts >= ?2 OR approval_id NOT IN (SELECT id FROM approvals
                    WHERE status IN ('pending', 'claimed') AND expires_at > ?1)"
                .into(),
            args: vec![SqlArg::Int(now), SqlArg::Int(max_attempts)],
        },
        SqlCond {
            sql: format!(
                "SELECT o.approval_id, o.kind, s.device, s.endpoint, s.p256dh, s.auth
                 FROM push_outbox o JOIN push_subscriptions s ON s.device = o.device
                 WHERE (o.state = 'failed' OR o.updated_at < ?1) AND o.attempts < ?2
                 ORDER BY o.updated_at LIMIT {RETRY_BATCH}"
            ),
            args: vec![SqlArg::Int(gone_before), SqlArg::Int(max_attempts)],
        },
    ]
}
