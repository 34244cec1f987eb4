//! `GET /api/v1/approvals/{id}`: one approval as an approver sees it. Unknown and not-yours are the same 404.

use ringi_core::api::deferred::Deferred;
use ringi_core::api::wire::ApprovalView;
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::base::status::ApprovalStatus;
use ringi_core::base::time::format_rfc3339;
use ringi_core::domain::audit::{Actor, Event};
use ringi_core::domain::schedule::ScheduleView;
use ringi_core::domain::vote::progress;
use ringi_core::{ApiError, ApprovalId};
use worker::Response;

use crate::platform::now_ms;
use crate::store::{ApprovalStore, AuditStore, Loaded, Store};

/// The caller's first view is recorded in the same round trip (the one write a GET makes: an audit event,
/// only for a listed approver, once per approver), and the approval's timeline and schedule are read with it.
/// `reminder_window_ms`: where the default reminder falls (`REMINDER_BEFORE_SECONDS`), for the schedule shown.
pub async fn get(
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
    reminder_window_ms: i64,
) -> Result<Response, ApiError> {
    let now = now_ms();
    let keys: Vec<String> = who.principals().iter().map(Principal::key).collect();
    let viewed =
        store.view(id, &Actor::user(who), &serde_json::Value::from(keys).to_string(), now, reminder_window_ms).await?;
    // The approval, if it exists *and* the caller is one of its approvers, handed on or not (else the same 404).
    let (loaded, schedule) = viewed
        .loaded
        .filter(|(l, _)| ringi_core::domain::delegation::may_view(&l.seats, who))
        .ok_or(ApiError::NotFound)?;
    super::http::json(200, &view(loaded, schedule, viewed.events, who, now))
}

/// The approval, if it exists *and* the caller is one of its approvers (else the same 404).
pub async fn load_for(store: &impl ApprovalStore, id: &ApprovalId, who: &Identity) -> Result<Loaded, ApiError> {
    let loaded = store.load(id).await?.ok_or(ApiError::NotFound)?;
    if !ringi_core::domain::delegation::may_view(&loaded.seats, who) {
        return Err(ApiError::NotFound);
    }
    Ok(loaded)
}

fn view(loaded: Loaded, schedule: ScheduleView, events: Vec<Event>, who: &Identity, now: i64) -> ApprovalView {
    let Loaded { approval: a, principals, seats, votes } = loaded;
    let status = a.status.effective(a.expires_at, now);
    let unconfirmed = status == ApprovalStatus::DecidedUnconfirmed;
    let cannot_decide = a.refusal(who).map(|e| e.error_code());
    let step_up = a.require_sign_in.as_ref().is_some_and(|r| !ringi_core::domain::step_up::met(r, &who.sign_in, now));
    let mut shown = ApprovalView {
        cannot_decide,
        can_decide: false,
        requested_by: a.requested_by.clone(),
        on_expiry: a.on_expiry,
        decided_on_expiry: a.decided_on_expiry,
        id: a.id.to_string(),
        status,
        verdict: a.verdict,
        attempted_by: if unconfirmed { a.attempt_by.clone().or_else(|| a.attempt_sub.clone()) } else { None },
        progress: progress(a.quorum, a.approver_count, &votes),
        approvers: principals,
        quorum: a.quorum,
        created_at: format_rfc3339(a.created_at),
        expires_at: format_rfc3339(a.expires_at),
        decided_at: a.decided_at.map(format_rfc3339),
        locale: a.locale.map(|l| l.as_str().to_owned()),
        my_decision: votes.iter().find(|v| v.sub == who.sub).map(|v| v.audit_entry()),
        decisions: Deferred::new(&votes.iter().map(|v| v.audit_entry()).collect()),
        delegations: Deferred::new(&ringi_core::domain::delegation::delegation_views(&seats)),
        my_seat: ringi_core::domain::delegation::my_seat(&seats, who),
        title: a.title,
        summary: a.summary,
        details: a.details,
        form: a.form,
        context: a.context,
        registered_by: a.registered_by,
        events: Deferred::new(&events),
        schedule: Deferred::new(&schedule),
        require_sign_in: a.require_sign_in,
        step_up,
    };
    shown.can_decide = shown.decidable();
    shown
}
