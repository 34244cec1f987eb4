//! The cron's outcome on expiry (`ringi_core::domain::on_expiry`): for each approval whose chosen outcome is due,
//! the steps of a person's decision (`routes::decision_attempt`) with ringi as the decider — the conditional
//! claim that records the attempt, the callback, then what came of it: decided on expiry (200), the recorded
//! attempt's verdict unconfirmed or expired (task closed), or the claim released for the next run (any
//! failure). Exactly once: two runs at the same time race for the same claim, and one wins.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::adapters::sfn::CallbackOutcome;
use ringi_core::api::decision::DecisionRecord;
use ringi_core::config::Config;
use ringi_core::domain::on_expiry::{callback, decider};
use ringi_core::ApiError;
use serde_json::json;

use crate::platform::{log, now_ms, random_bytes};
use crate::sfn_client::{deliver, Delivery};
use crate::store::{ApprovalStore, DueOutcome, OnExpiryStore, Store};

/// Answers the due approvals; how many ended decided (confirmed or not). A failure of one approval is logged
/// and leaves it for the next run; only the look-up's failure fails the step.
pub async fn run(cfg: &Config, store: &Store, now: i64) -> Result<usize, ApiError> {
    let mut decided = 0;
    for due in store.on_expiry_due(now).await? {
        match answer(cfg, store, &due).await {
            Ok(done) => decided += usize::from(done),
            Err(e) => log("warn", "on_expiry_failed", json!({"approvalId": due.id.as_str(), "error": e.to_string()})),
        }
    }
    Ok(decided)
}

/// ringi's receipt of its own outcome (`ringi_core::api::receipt`: the claims of a person's decision, decided by
/// ringi's issuer, `"reason": "expiry"`), where ringi has a key ring.
async fn receipt(cfg: &Config, due: &DueOutcome, now: i64) -> Result<Option<String>, ApiError> {
    let ringi = decider(cfg.issuer_url());
    let record = DecisionRecord::on_expiry(&due.id, due.verdict, &ringi, now);
    crate::receipt::sign(cfg, &record, due.quorum, due.request_sha256.as_deref(), &due.token).await
}

/// One approval: `Ok(true)` once its outcome is on record, `Ok(false)` when someone else holds it (a person
/// deciding, another run) or it is no longer open.
async fn answer(cfg: &Config, store: &Store, due: &DueOutcome) -> Result<bool, ApiError> {
    let (id, verdict) = (&due.id, due.verdict);
    let claim_id = URL_SAFE_NO_PAD.encode(random_bytes::<12>());
    let now = now_ms();
    // Signed before anything is claimed, as a person's decision is: a failure leaves the approval for the next run.
    let receipt = receipt(cfg, due, now).await?;
    let attempt = match store.claim_on_expiry(id, &claim_id, now, now + cfg.claim_lease_ms, verdict).await {
        Ok(Some(attempt)) => attempt,
        Ok(None) => return Ok(false),
        Err(e) => {
            // The claim may have been taken with its answer lost: nothing was sent under it.
            let _ = store.release(id, &claim_id, true).await;
            return Err(e);
        }
    };
    let cb = callback(id, verdict, due.expires_at, now, receipt.as_deref());
    let Delivery { outcome, maybe_delivered } =
        deliver(cfg, store.probe(), id, &cb, &due.token, due.target.as_ref()).await;
    let fields = |code: &str| json!({"approvalId": id.as_str(), "verdict": verdict.as_str(), "code": code});
    match outcome {
        CallbackOutcome::Delivered => {
            // As for a person's decision: one more go, then the lease and the next run sort it out (Step
            // Functions then says the task is closed, and the attempt on record resolves it, unconfirmed).
            if let Err(e) = store.finish_on_expiry(id, &claim_id, verdict, now).await {
                if store.finish_on_expiry(id, &claim_id, verdict, now).await.is_err() {
                    let fields =
                        json!({"approvalId": id.as_str(), "verdict": verdict.as_str(), "error": e.to_string()});
                    log("error", "decision_not_recorded", fields);
                }
            }
            log("info", "decided_on_expiry", json!({"approvalId": id.as_str(), "verdict": verdict.as_str()}));
            Ok(true)
        }
        CallbackOutcome::TaskClosed(code) if attempt.may_have_closed_the_task(&claim_id, maybe_delivered) => {
            store.unconfirmed_on_expiry(id, &claim_id, &attempt, now_ms()).await?;
            log("warn", "decided_unconfirmed", fields(&code));
            Ok(true)
        }
        CallbackOutcome::TaskClosed(code) => {
            store.expire(id, &claim_id, now_ms()).await?;
            log("info", "task_closed", fields(&code));
            Ok(false)
        }
        CallbackOutcome::Retryable(code) | CallbackOutcome::Refused(code) | CallbackOutcome::Invalid(code) => {
            // Released (the attempt record stays if a try may have got through): the next run tries again.
            let _ = store.release(id, &claim_id, !maybe_delivered).await;
            log("warn", "on_expiry_callback_failed", fields(&code));
            Ok(false)
        }
    }
}
