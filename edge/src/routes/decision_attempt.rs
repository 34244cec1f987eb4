//! One attempt to deliver a decision: claim the approval (recording the attempt), call Step Functions,
//! write what came of it. Each step's storage failure has the outcome faults.md lists.

use ringi_core::adapters::sfn::CallbackOutcome;

use ringi_core::api::decision::{DecisionRecord, DecisionRequest, PriorApproval};
use ringi_core::api::wire::DecisionResponse;
use ringi_core::base::principal::Identity;
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::approval::check_decidable;
use ringi_core::domain::callback::SfnCallback;
use ringi_core::domain::rules;
use ringi_core::domain::vote::Progress;
use ringi_core::{ApiError, ApprovalId};
use serde_json::json;
use worker::Response;

use super::http::Ctx;
use crate::platform::{log, now_ms};
use crate::sfn_client::{deliver, Delivery};
use crate::store::{Approval, ApprovalStore, Attempt, CallbackFailure, ClaimRequest, Store, Vote};

/// Why this request delivers a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The caller's verdict decides (a rejection, or the approval that completes the quorum).
    Decides,
    /// The caller's recorded approval met the quorum together with one recorded at the same moment: if
    /// another request holds the claim, that one delivers.
    JoinsQuorum,
}

pub struct DecisionAttempt<'a> {
    pub ctx: &'a Ctx,
    pub store: &'a Store,
    pub approval: &'a Approval,
    pub who: &'a Identity,
    pub request: &'a DecisionRequest,
    /// The caller's vote, written with the final state.
    pub vote: Vote<'a>,
    /// Earlier approvals the workflow is told about.
    pub prior: Vec<PriorApproval>,
    pub completion: Completion,
    /// The claim this request takes (or took already, in its first round trip).
    pub claim: &'a ClaimRequest<'a>,
}

/// A claim this request holds.
struct Claim {
    id: String,
    attempt: Attempt,
}

impl DecisionAttempt<'_> {
    fn id(&self) -> &ApprovalId {
        &self.approval.id
    }

    fn progress(&self, verdict: Verdict) -> Progress {
        let required = self.approval.required();
        Progress { approvals: if verdict == Verdict::Approve { required } else { 0 }, required }
    }

    /// Builds the callback (its size limits are checked before anything is claimed), then claims and delivers.
    /// `taken`: the claim this request took in its first round trip (its recorded attempt), if it did.
    pub async fn run(self, verdict: Verdict, taken: Option<Attempt>) -> Result<Response, ApiError> {
        let unsigned = DecisionRecord {
            approval_id: self.id(),
            verdict,
            decided_by: self.who,
            comment: self.request.comment.as_deref(),
            feedback: self.request.feedback.as_ref(),
            decided_at_ms: self.vote.at,
            prior_approvals: &self.prior,
            // A vote through a delegated seat satisfies another principal's slot: the workflow learns whose.
            on_behalf_of: Some(&self.vote.principal).filter(|p| !self.who.principals().contains(*p)),
            receipt: None,
            on_expiry: false,
        };
        let receipt = match self.receipt(&unsigned, verdict).await {
            Ok(r) => r,
            Err(e) => return Err(self.undo(taken.is_some(), e).await),
        };
        let record = DecisionRecord { receipt: receipt.as_deref(), ..unsigned };
        let callback = match record.callback() {
            Ok(c) => c,
            Err(e) => return Err(self.undo(taken.is_some(), e).await),
        };
        let claim = match taken {
            Some(attempt) => Some(Claim { id: self.claim.claim_id.to_owned(), attempt }),
            None => self.claim().await?,
        };
        match claim {
            Some(claim) => self.deliver(verdict, claim, &callback).await,
            None if self.completion == Completion::JoinsQuorum => {
                // Our vote is recorded; the approver who won the claim is delivering the decision.
                respond(self.id(), ApprovalStatus::Pending, None, self.progress(Verdict::Approve))
            }
            None => {
                let current = self.store.get(self.id()).await?.ok_or(ApiError::NotFound)?;
                check_decidable(&current.state(), now_ms())?;
                Err(ApiError::changed_meanwhile())
            }
        }
    }

    /// The decision's signed receipt, where ringi has a key ring and the approval still has its token.
    async fn receipt(&self, record: &DecisionRecord<'_>, verdict: Verdict) -> Result<Option<String>, ApiError> {
        let Some(token) = self.approval.token.as_ref() else { return Ok(None) };
        crate::receipt::sign(
            &self.ctx.cfg,
            record,
            self.progress(verdict),
            self.approval.request_sha256.as_deref(),
            token,
        )
        .await
    }

    /// Takes the claim; `None` if another request holds it or the approval is no longer decidable. An approval
    /// that completes the quorum claims under its guards (`rules::completion_guards`): its slot still free, its
    /// person uncounted, the approvals it completes still on record.
    async fn claim(&self) -> Result<Option<Claim>, ApiError> {
        let completing;
        let request = if self.completion == Completion::Decides && self.vote.verdict == Verdict::Approve {
            let guards = rules::completion_guards(
                &self.who.sub,
                &self.vote.principal,
                self.vote.email,
                self.approval.required(),
            );
            completing = ClaimRequest { guards, ..self.claim.clone() };
            &completing
        } else {
            self.claim
        };
        match self.store.claim(self.id(), request).await {
            Ok(won) => Ok(won.map(|attempt| Claim { id: self.claim.claim_id.to_owned(), attempt })),
            // The claim may have been taken all the same (its answer lost).
            Err(e) => Err(self.undo(true, e).await),
        }
    }

    /// Nothing was sent under this request's claim (if it took one): see [`give_back`].
    async fn undo(&self, claimed: bool, e: ApiError) -> ApiError {
        if !claimed {
            return e;
        }
        give_back(self.ctx, self.store, self.id(), self.claim.claim_id, e).await
    }

    /// Calls Step Functions under the claim and records what came of it.
    async fn deliver(&self, verdict: Verdict, claim: Claim, callback: &SfnCallback) -> Result<Response, ApiError> {
        let (store, id) = (self.store, self.id());
        let Some(token) = &self.approval.token else {
            store.release(id, &claim.id, true).await?;
            return Err(ApiError::Expired);
        };
        let Delivery { outcome, maybe_delivered } =
            deliver(&self.ctx.cfg, &self.ctx.probe, id, callback, token, self.approval.target.as_ref()).await;
        match outcome {
            CallbackOutcome::Delivered => self.delivered(verdict, &claim).await,
            CallbackOutcome::TaskClosed(code) if claim.attempt.may_have_closed_the_task(&claim.id, maybe_delivered) => {
                self.unconfirmed(verdict, &claim, &code).await
            }
            CallbackOutcome::TaskClosed(code) => {
                store.expire(id, &claim.id, now_ms()).await?;
                log("info", "task_closed", json!({"approvalId": id.as_str(), "code": code}));
                Err(ApiError::Expired)
            }
            CallbackOutcome::Retryable(code) => {
                // Released either way; the attempt record stays if a try may have gone through.
                let released = store
                    .release_failed(id, &claim.id, !maybe_delivered, &self.failure(verdict, "unavailable", &code))
                    .await;
                let fields = json!({"approvalId": id.as_str(), "code": code, "maybeDelivered": maybe_delivered});
                log("warn", "sfn_unavailable", fields);
                match released {
                    Ok(()) => Err(ApiError::sfn_unavailable()),
                    Err(_) => Err(ApiError::sfn_unavailable().claim_left_held(self.ctx.cfg.claim_lease_ms)),
                }
            }
            CallbackOutcome::Refused(code) | CallbackOutcome::Invalid(code) => {
                let failure = self.failure(verdict, "refused", &code);
                let _ = store.release_failed(id, &claim.id, !maybe_delivered, &failure).await;
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

    /// The `callback_failed` event's facts: the error's class and type only (a network error's message may
    /// name hosts; nothing of the request, which carries the token, is ever in it).
    fn failure(&self, verdict: Verdict, class: &'static str, code: &str) -> CallbackFailure {
        let code = if code.starts_with("network") { "network".to_owned() } else { code.chars().take(64).collect() };
        CallbackFailure { actor: self.vote.actor(), verdict, class, code, at: now_ms() }
    }

    /// Step Functions took the decision (200).
    async fn delivered(&self, verdict: Verdict, claim: &Claim) -> Result<Response, ApiError> {
        let (store, id) = (self.store, self.id());
        let status = verdict.final_status();
        if let Err(e) = store.finish(id, &claim.id, &self.vote).await {
            // Only our record of it is missing. One more go, then leave it: the approval stays claimed with an
            // attempt on record, and the next decision (after the lease) learns from Step Functions that the
            // task is closed and shows the recorded verdict as unconfirmed.
            if store.finish(id, &claim.id, &self.vote).await.is_err() {
                let fields = json!({"approvalId": id.as_str(), "status": status.as_str(), "error": e.to_string()});
                log("error", "decision_not_recorded", fields);
            }
        }
        log("info", "decided", json!({"approvalId": id.as_str(), "status": status.as_str(), "sub": self.who.sub}));
        respond(id, status, None, self.progress(verdict))
    }

    /// The task is closed and an attempt that may have been delivered is on record (an earlier request's,
    /// or one of our own tries that timed out / was reset / got a 5xx): the task most likely closed because
    /// of it. Its verdict, unconfirmed — never "expired", never a confident decision.
    async fn unconfirmed(&self, verdict: Verdict, claim: &Claim, code: &str) -> Result<Response, ApiError> {
        let id = self.id();
        let recorded = claim.attempt.verdict.unwrap_or(verdict);
        let ours = claim.attempt.id.as_deref() == Some(&claim.id);
        // The caller's own attempt (this request's, or an earlier one of theirs with this verdict).
        let mine = ours || (claim.attempt.sub.as_deref() == Some(self.who.sub.as_str()) && recorded == verdict);
        self.store.unconfirmed(id, &claim.id, now_ms(), mine.then_some(&self.vote)).await?;
        log(
            "warn",
            "decided_unconfirmed",
            json!({"approvalId": id.as_str(), "code": code, "verdict": recorded.as_str(), "attemptBy": claim.attempt.sub}),
        );
        if !mine {
            return Err(ApiError::AlreadyDecided(ApprovalStatus::DecidedUnconfirmed));
        }
        respond(id, ApprovalStatus::DecidedUnconfirmed, Some(recorded), self.progress(recorded))
    }
}

/// Nothing was sent under the claim `claim_id`: release it and forget its attempt. If storage is still failing,
/// its lease frees it, and `e` (what the caller is told) asks them to wait that long.
pub(super) async fn give_back(ctx: &Ctx, store: &Store, id: &ApprovalId, claim_id: &str, e: ApiError) -> ApiError {
    match store.release(id, claim_id, true).await {
        Ok(()) => e,
        Err(_) => e.claim_left_held(ctx.cfg.claim_lease_ms),
    }
}

pub(super) fn respond(
    id: &ApprovalId,
    status: ApprovalStatus,
    verdict: Option<Verdict>,
    progress: Progress,
) -> Result<Response, ApiError> {
    super::http::json(200, &DecisionResponse { id: id.to_string(), status, verdict, progress })
}
