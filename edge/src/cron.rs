//! The scheduled handler (`[triggers] crons`; locally `wrangler dev --test-scheduled`, GET /__scheduled):
//! stale claims, expiry, retention purge, mail and chat retries, the default reminder before expiry, the audit
//! retention, the registrations' own schedules (reminders at their times, escalation: `ScheduleStore`) and
//! the chosen outcome of approvals nobody decided (`onExpiry`).
//!
//! Every step runs whatever the others did: a D1 failure in one step is logged and the next step runs
//! (the cron returns an error naming the failed steps). Each step is safe to repeat, so a step that failed
//! simply runs again on the next trigger.
//!
//! Mail is at-least-once, sent *before* it is recorded: a mail whose record write fails is sent again by a
//! later run — at most one extra mail per recipient per run in which that write fails (request mails: at
//! most `MAX_MAIL_ATTEMPTS` in all). Nothing is marked before it is sent, so no reminder is lost to a
//! failed send or a failed write.

use ringi_core::adapters::mail::MailKind;
use ringi_core::config::Config;
use ringi_core::dev::faults::FaultSpec;
use ringi_core::dev::latency::Delays;
use ringi_core::dev::switch::cron_part;
use ringi_core::domain::audit::EventKind;
use ringi_core::domain::schedule::{reminder_recipients, EntryKind, Outcome};
use serde_json::json;
use worker::Env;

use crate::mailer;
use crate::platform::{log, now_ms};
use crate::probe::Probe;
use crate::store::{DueEntry, PushStore, ScheduleStore, Store, UpkeepStore, SCHEDULE_LEASE_MS};

const MAX_MAIL_ATTEMPTS: i64 = 5;
/// A request mail is sent after the registration's response, within the ≈ 30 s a worker may run on; one
/// still `pending` after this long lost its sender.
const MAIL_SENDER_GRACE_MS: i64 = 2 * 60_000;

pub async fn run(env: &Env, cron: &str) -> Result<(), String> {
    let cfg = crate::config::load(env).map_err(|e| e.to_string())?;
    // Dev/bench only: with a switch at `header`, a cron run takes its setting from the trigger's cron string
    // (`wrangler dev --test-scheduled`: `/__scheduled?cron=… d1-fault=call=3 latency=d1=80`), as requests
    // take a header; a malformed one is ignored.
    let faults = cfg.d1_faults.resolve(cron_part(cron, "d1-fault"), FaultSpec::parse).ok().flatten();
    let delays = cfg.inject_latency.resolve(cron_part(cron, "latency"), Delays::parse).ok().flatten();
    let probe = Probe::new(faults, delays.unwrap_or_default());
    let store = Store::open(env, probe.clone()).map_err(|e| e.to_string())?;
    let now = now_ms();
    let mut failed: Vec<&str> = Vec::new();
    let mut step = |name: &'static str, r: Result<usize, ringi_core::ApiError>| -> usize {
        r.unwrap_or_else(|e| {
            log("error", "cron_step_failed", json!({"step": name, "error": e.to_string()}));
            failed.push(name);
            0
        })
    };
    let released = step("release_stale_claims", store.release_stale_claims(now).await);
    let expired = step("expire_due", store.expire_due(now).await);
    // Retention (the DynamoDB backend leaves it to the table's TTL and counts nothing here).
    let purged = step("purge", store.purge(now - cfg.retention_ms, now - 3_600_000, now).await);

    let (mut retried, mut chat_retried) = (0, 0);
    let due = step_rows(
        &mut step,
        "mail_retries",
        store.mail_retries(now, MAX_MAIL_ATTEMPTS, now - MAIL_SENDER_GRACE_MS).await,
    );
    for row in due.mail {
        // Sent, then recorded (`send_request`); one approval's failure does not stop the others.
        retried += step("mail_retry", mailer::send_request(&cfg, &store, &row).await.map(|_| 1));
    }
    // Chat notifications by the same rule (failed, or still pending past the sender's grace), channels still
    // due only; their look-up came with the mail retries'.
    for row in due.chat {
        chat_retried += step("chat_retry", crate::chat::send(&cfg, &store, &row).await.map(|_| 1));
    }

    // Push messages whose push service failed (or whose sender died), through the outbox; no step at all (no
    // round trip) where push is off.
    let mut push_retried = 0;
    if cfg.push.is_some() {
        let push_due = step_rows(
            &mut step,
            "push_retries",
            store.push_retries(now, MAX_MAIL_ATTEMPTS, now - MAIL_SENDER_GRACE_MS).await,
        );
        for r in push_due {
            push_retried += step("push_retry", crate::push::deliver(&cfg, &store, &r.job, &r.kind, &r.devices).await);
        }
    }

    let mut reminded = 0;
    for (row, voted) in step_rows(&mut step, "reminders_due", store.reminders_due(now, cfg.reminder_window_ms).await) {
        // Only to those who have not voted yet. Sent first, marked after: a failed send is retried by the next
        // run, a failed mark costs at most one more reminder (never a lost one). Their devices get it too.
        let to = reminder_recipients(&row.notify, None, &voted);
        crate::push::send_to_deciders(&cfg, &store, &row, "reminder").await;
        match mailer::send_to(&cfg, &probe, &row, &to, MailKind::Reminder, None).await {
            Ok(_) => {
                let marked = store.mark_reminded(&row.id, now, to.len()).await;
                reminded += step("mark_reminded", marked.map(|_| 1));
            }
            Err(e) => log("warn", "reminder_not_sent", json!({"approvalId": row.id.as_str(), "error": e})),
        }
    }
    // The steps below come after the ones above, so that those keep the numbers of their D1 calls (the fault
    // matrix counts them). The audit retention: events older than AUDIT_RETENTION_DAYS, whatever became of their
    // approvals.
    let events_purged = step("purge_events", store.purge_events(now - cfg.audit_retention_ms).await);

    // The registrations' own schedules (reminders at their times, escalation).
    let lease = ringi_core::base::hex::hex_sha256(&crate::platform::random_bytes::<16>());
    let mut scheduled = 0;
    for entry in step_rows(&mut step, "schedule_due", store.schedule_due(now, &lease, SCHEDULE_LEASE_MS).await) {
        scheduled += step("schedule_entry", run_entry(&cfg, &probe, &store, &entry, &lease, now).await);
    }
    // Last: the outcome chosen for approvals nobody decided.
    let auto_decided = step("on_expiry", crate::on_expiry::run(&cfg, &store, now).await);
    // The events this run wrote, and any a request left unsealed, into their hash chains (through a probe of their
    // own: the run's count below is the steps').
    crate::store::seal_written(env, &probe, true).await;
    log(
        "info",
        "cron",
        json!({"released": released, "expired": expired, "purged": purged, "mailRetried": retried, "chatRetried": chat_retried, "pushRetried": push_retried,
               "reminded": reminded, "eventsPurged": events_purged, "scheduled": scheduled, "decidedOnExpiry": auto_decided,
               "failedSteps": failed, "roundTrips": probe.round_trips().to_string(),
               "d1Tries": probe.d1_tries()}),
    );
    outcome(&failed)
}

/// The run's result: an error naming the steps that failed (each one already logged).
fn outcome(failed: &[&str]) -> Result<(), String> {
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("cron steps failed: {}", failed.join(", ")))
    }
}

/// One due entry of a registration's schedule: a reminder to those who have not voted (the escalation's
/// addresses included once it happened), or the escalation (principals added, then mailed). Mail first,
/// the done mark after (conditional on this run's lease); a failed send gives the entry back for the next run.
async fn run_entry(
    cfg: &Config,
    probe: &Probe,
    store: &Store,
    entry: &DueEntry,
    lease: &str,
    now: i64,
) -> Result<usize, ringi_core::ApiError> {
    let job = &entry.job;
    let (to, kind, note) = match entry.kind {
        EntryKind::Reminder => {
            let escalated = entry.escalation.as_ref().filter(|_| entry.escalated);
            crate::push::send_to_deciders(cfg, store, job, "reminder").await;
            (reminder_recipients(&job.notify, escalated, &entry.voted), MailKind::Reminder, None)
        }
        EntryKind::Escalation => {
            let Some(esc) = entry.escalation.as_ref() else {
                return store.schedule_done(entry, lease, now, Outcome::Skipped, None).await.map(|_| 0);
            };
            if let Err(e) = store.escalate(&job.id, &esc.to, esc.note.as_deref(), now).await {
                // Given back for the next run (if D1 lets us), else after the lease.
                let _ = store.schedule_release(entry, lease).await;
                return Err(e);
            }
            if let Err(e) = crate::push::send(cfg, store, job, "escalation", &esc.to).await {
                log(
                    "error",
                    "push_not_sent",
                    json!({"approvalId": job.id.as_str(), "kind": "escalation", "error": e.to_string()}),
                );
            }
            (esc.emails(), MailKind::Escalation, esc.note.as_deref())
        }
    };
    match mailer::send_to(cfg, probe, job, &to, kind, note).await {
        Ok(sent) => {
            let outcome = if sent || entry.kind == EntryKind::Escalation { Outcome::Sent } else { Outcome::Skipped };
            // The escalation's event is written with its principals (`escalate`); a reminder's with its mark.
            let event = (sent && entry.kind == EntryKind::Reminder).then(|| {
                let mut detail = serde_json::Map::new();
                detail.insert("recipients".into(), to.len().into());
                (EventKind::Reminded, detail)
            });
            store.schedule_done(entry, lease, now, outcome, event).await.map(|_| 1)
        }
        Err(e) => {
            log(
                "warn",
                "scheduled_mail_not_sent",
                json!({"approvalId": job.id.as_str(), "kind": entry.kind.as_str(), "error": e}),
            );
            store.schedule_release(entry, lease).await.map(|_| 0)
        }
    }
}

/// The rows a step read, or none if that read failed (logged through `step`).
fn step_rows<T: Default>(
    step: &mut impl FnMut(&'static str, Result<usize, ringi_core::ApiError>) -> usize,
    name: &'static str,
    r: Result<T, ringi_core::ApiError>,
) -> T {
    r.unwrap_or_else(|e| {
        step(name, Err(e));
        T::default()
    })
}
