//! `POST /api/v1/approvals/{id}/decision`: verify → approver? → validate → claim (records the attempt) →
//! callback → final write (design.md §4, §8 "Failure semantics").

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::approval::{check_decidable, next_step, ApprovalStatus, CastApproval, Step, Verdict};
use ringi_core::decision::{DecisionRecord, DecisionRequest};
use ringi_core::principal::{Identity, Principal};
use ringi_core::sfn::CallbackOutcome;
use ringi_core::wire::{DecisionResponse, Progress};
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Value};
use worker::{Request, Response};

use super::approval_get::load_for;
use super::Ctx;
use crate::auth::authenticate;
use crate::platform::{log, now_ms, random_bytes};
use crate::sfn_client::{deliver, Delivery};
use crate::store::{pkey, ApprovalRow, DecisionRow, Loaded, Store, Vote};

pub async fn post(req: &mut Request, ctx: &Ctx, id: &str) -> Result<Response, ApiError> {
    let who = authenticate(req, &ctx.cfg, &ctx.cfg.user_rules()).await?;
    let body = super::body_bytes(req).await?;
    let id = ApprovalId::parse(id).map_err(|_| ApiError::NotFound)?;
    let store = ctx.store()?;
    let Loaded { row, principals, decisions } = load_for(&store, &id, &who).await?;
    let request = DecisionRequest::parse(&body)?;
    request.validate_against(&row.form())?;
    let now = now_ms();
    check_decidable(&row.state()?, now)?;

    let mine = decisions.iter().find(|d| d.sub == who.sub);
    if mine.is_some_and(|d| d.decision != request.decision.as_str()) {
        return Err(ApiError::AlreadyVoted);
    }
    let approvals = cast_approvals(&decisions);
    let cast: Vec<CastApproval<'_>> = approvals
        .iter()
        .map(|(d, principal)| CastApproval { sub: &d.sub, email: d.email.as_deref(), principal })
        .collect();
    let step = next_step(request.decision, row.quorum(), &principals, &who, &cast)?;
    let mut vote = Vote {
        sub: &who.sub,
        principal: String::new(),
        email: who.email.as_deref(),
        username: who.username.as_deref(),
        decision: request.decision.as_str(),
        comment: request.comment.as_deref(),
        feedback: request.feedback.as_ref(),
        at: now,
    };
    let others: Vec<&DecisionRow> = decisions.iter().filter(|d| d.sub != who.sub && d.decision == "approve").collect();
    let required = row.quorum().required(row.approver_count as usize);
    let mut raced_to_quorum = false;
    let verdict = match step {
        Step::Complete { verdict, principal } => {
            vote.principal = pkey(&principal);
            verdict
        }
        Step::Record { principal, required, .. } => {
            vote.principal = pkey(&principal);
            if mine.is_none() {
                store.record_vote(&id, &vote).await?;
            }
            // Another approver may have voted at the same moment: re-read. If this vote completed the quorum,
            // try to deliver it (the claim keeps that exactly-once).
            let now_decisions = store.decisions(&id).await?;
            if !now_decisions.iter().any(|d| d.sub == who.sub) {
                // Someone satisfied the same principal at the same moment: deciding again places this vote anew.
                return Err(ApiError::InProgress);
            }
            let approvals = cast_approvals(&now_decisions).len() as u32;
            if approvals < required {
                return respond(&id, ApprovalStatus::Pending, None, Progress { approvals, required });
            }
            raced_to_quorum = true;
            Verdict::Approve
        }
    };

    let prior: Vec<Value> = others
        .iter()
        .map(|d| json!({"sub": d.sub, "email": d.email, "username": d.username, "comment": d.comment, "at": ringi_core::time::format_rfc3339(d.at as i64)}))
        .collect();
    let record = DecisionRecord {
        approval_id: &id,
        verdict,
        decided_by: &who,
        comment: request.comment.as_deref(),
        feedback: request.feedback.as_ref(),
        decided_at_ms: now,
        prior_approvals: &prior,
    };
    let callback = record.callback()?;
    complete(ctx, &store, &row, &id, &who, verdict, &vote, callback, raced_to_quorum, required).await
}

#[allow(clippy::too_many_arguments)]
async fn complete(
    ctx: &Ctx,
    store: &Store,
    row: &ApprovalRow,
    id: &ApprovalId,
    who: &Identity,
    verdict: Verdict,
    vote: &Vote<'_>,
    callback: ringi_core::sfn::SfnCallback,
    raced_to_quorum: bool,
    required: u32,
) -> Result<Response, ApiError> {
    let claim_id = URL_SAFE_NO_PAD.encode(random_bytes::<12>());
    let now = now_ms();
    let by = who.email.clone().or_else(|| who.username.clone()).unwrap_or_else(|| who.sub.clone());
    let claimed = match store.claim(id, &claim_id, now, now + ctx.cfg.claim_lease_ms, verdict, &who.sub, &by).await {
        Ok(c) => c,
        Err(e) => {
            // Nothing was sent. The claim may have been taken all the same (its answer lost): release it and
            // forget its attempt, or, if storage is still failing, its lease frees it.
            let _ = store.release(id, &claim_id, true).await;
            return Err(e);
        }
    };
    let Some(attempt) = claimed else {
        if raced_to_quorum {
            // Our vote is recorded; the approver who won the claim is delivering the decision.
            return respond(id, ApprovalStatus::Pending, None, Progress { approvals: required, required });
        }
        let current = store.get(id).await?.ok_or(ApiError::NotFound)?;
        check_decidable(&current.state()?, now_ms())?;
        return Err(ApiError::InProgress);
    };
    let Some(token) = row.token() else {
        store.release(id, &claim_id, true).await?;
        return Err(ApiError::Expired);
    };
    let ours = attempt.attempt_id.as_deref() == Some(claim_id.as_str());
    let Delivery { outcome, maybe_delivered } = deliver(&ctx.cfg, id, &callback, &token).await;
    match outcome {
        CallbackOutcome::Delivered => {
            let status = verdict.final_status();
            if let Err(e) = store.finish(id, &claim_id, status, vote).await {
                // Step Functions took the decision; only our record of it is missing. One more go, then
                // leave it: the approval stays claimed with an attempt on record, and the next decision
                // (after the lease) learns from Step Functions that the task is closed and shows the
                // recorded verdict as unconfirmed.
                if store.finish(id, &claim_id, status, vote).await.is_err() {
                    log(
                        "error",
                        "decision_not_recorded",
                        json!({"approvalId": id.as_str(), "status": status.as_str(), "error": e.to_string()}),
                    );
                }
            }
            log("info", "decided", json!({"approvalId": id.as_str(), "status": status.as_str(), "sub": who.sub}));
            let approvals = if verdict == Verdict::Approve { required } else { 0 };
            respond(id, status, None, Progress { approvals, required })
        }
        CallbackOutcome::TaskClosed(code) => {
            let now = now_ms();
            if !ours || maybe_delivered {
                // An attempt that may have been delivered is on record (an earlier request's, or one of our
                // own tries that timed out / was reset / got a 5xx): the task most likely closed because of
                // it. Its verdict, unconfirmed — never "expired", never a confident decision.
                let recorded = attempt.verdict().unwrap_or(verdict);
                // The caller's own attempt (this request's, or an earlier one of theirs with this verdict).
                let mine = ours || (attempt.attempt_sub.as_deref() == Some(who.sub.as_str()) && recorded == verdict);
                store.unconfirmed(id, &claim_id, now, mine.then_some(vote)).await?;
                log(
                    "warn",
                    "decided_unconfirmed",
                    json!({"approvalId": id.as_str(), "code": code, "verdict": recorded.as_str(), "attemptBy": attempt.attempt_sub}),
                );
                if mine {
                    let approvals = if recorded == Verdict::Approve { required } else { 0 };
                    return respond(
                        id,
                        ApprovalStatus::DecidedUnconfirmed,
                        Some(recorded),
                        Progress { approvals, required },
                    );
                }
                return Err(ApiError::AlreadyDecided(ApprovalStatus::DecidedUnconfirmed.as_str().into()));
            }
            store.expire(id, &claim_id, now).await?;
            log("info", "task_closed", json!({"approvalId": id.as_str(), "code": code}));
            Err(ApiError::Expired)
        }
        CallbackOutcome::Retryable(code) => {
            // Released either way; the attempt record stays if a try may have gone through.
            let _ = store.release(id, &claim_id, !maybe_delivered).await;
            log(
                "warn",
                "sfn_unavailable",
                json!({"approvalId": id.as_str(), "code": code, "maybeDelivered": maybe_delivered}),
            );
            Err(ApiError::Unavailable)
        }
        CallbackOutcome::Refused(code) | CallbackOutcome::Invalid(code) => {
            let _ = store.release(id, &claim_id, !maybe_delivered).await;
            log(
                "error",
                "sfn_refused",
                json!({"approvalId": id.as_str(), "code": code,
                       "action": "Step Functions refused the callback: check the worker's AWS credentials, region, SFN_ENDPOINT and IAM policy (states:SendTaskSuccess, states:SendTaskFailure)"}),
            );
            Err(ApiError::UpstreamRejected)
        }
    }
}

/// The recorded approvals with the listed principal each one satisfied (at most one per principal).
fn cast_approvals(decisions: &[DecisionRow]) -> Vec<(&DecisionRow, Principal)> {
    decisions
        .iter()
        .filter(|d| d.decision == Verdict::Approve.as_str())
        .filter_map(|d| {
            let (kind, value) = d.principal.split_once(':')?;
            Some((d, Principal::from_parts(kind, value)?))
        })
        .collect()
}

fn respond(
    id: &ApprovalId,
    status: ApprovalStatus,
    verdict: Option<Verdict>,
    progress: Progress,
) -> Result<Response, ApiError> {
    super::json(200, &DecisionResponse { id: id.to_string(), status, verdict, progress })
}
