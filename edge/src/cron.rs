//! The scheduled handler (`[triggers] crons`; locally `wrangler dev --test-scheduled`, GET /__scheduled):
//! expiry, stale claims, retention purge, mail retries and one reminder per approval.

use ringi_core::mail::MailKind;
use serde_json::json;
use worker::Env;

use crate::mailer;
use crate::platform::{log, now_ms};
use crate::store::Store;

const MAX_MAIL_ATTEMPTS: i64 = 5;
/// A request mail is sent after the registration's response, within the ≈ 30 s a worker may run on; one
/// still `pending` after this long lost its sender.
const MAIL_SENDER_GRACE_MS: i64 = 2 * 60_000;

pub async fn run(env: &Env) -> Result<(), String> {
    let cfg = crate::config::load(env).map_err(|e| e.to_string())?;
    let store = Store::open(env).map_err(|e| e.to_string())?;
    let now = now_ms();
    let e = |x: ringi_core::ApiError| x.to_string();
    let released = store.release_stale_claims(now).await.map_err(e)?;
    let expired = store.expire_due(now).await.map_err(e)?;
    let purged = store.purge(now - cfg.retention_ms, now - 3_600_000).await.map_err(e)?;
    let mut retried = 0;
    for row in store.mail_retries(now, MAX_MAIL_ATTEMPTS, now - MAIL_SENDER_GRACE_MS).await.map_err(e)? {
        mailer::send_request(&cfg, &store, &row).await.map_err(e)?;
        retried += 1;
    }
    let mut reminded = 0;
    for row in store.reminders_due(now, cfg.reminder_window_ms).await.map_err(e)? {
        // Marked first: a reminder is a courtesy, sending it twice is worse than not at all.
        store.mark_reminded(&row.id, now).await.map_err(e)?;
        if mailer::send(&cfg, &row, MailKind::Reminder).await.is_ok() {
            reminded += 1;
        }
    }
    log(
        "info",
        "cron",
        json!({"released": released, "expired": expired, "purged": purged, "mailRetried": retried, "reminded": reminded}),
    );
    Ok(())
}
