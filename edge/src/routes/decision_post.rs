//! `POST /api/v1/approvals/{id}/decision`: approver? → validate → vote (quorum) → claim (records the
//! attempt) → callback → final write (design.md §4, §8 "Failure semantics"); the last three steps are
//! [`DecisionAttempt`].

use ringi_core::approval::{check_decidable, next_step, ApprovalStatus, Step, Verdict};
use ringi_core::decision::{DecisionRequest, PriorApproval};
use ringi_core::principal::{Identity, Principal};
use ringi_core::vote::{approvals_so_far, cast_approvals};
use ringi_core::wire::{DecisionResponse, Progress};
use ringi_core::{ApiError, ApprovalId};
use worker::{Request, Response};

use super::approval_get::load_for;
use super::decision_attempt::{Completion, DecisionAttempt};
use super::Ctx;
use crate::platform::now_ms;
use crate::store::{Loaded, Store, Vote};

pub async fn post(
    req: &mut Request,
    ctx: &Ctx,
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
) -> Result<Response, ApiError> {
    let body = super::body_bytes(req).await?;
    let Loaded { approval, principals, votes } = load_for(store, id, who).await?;
    let request = DecisionRequest::parse(&body)?;
    request.validate_against(&approval.form)?;
    let now = now_ms();
    check_decidable(&approval.state(), now)?;
    let mine = votes.iter().find(|v| v.sub == who.sub);
    if mine.is_some_and(|v| v.verdict != request.decision) {
        return Err(ApiError::AlreadyVoted);
    }
    let step = next_step(request.decision, approval.quorum, &principals, who, &cast_approvals(&votes))?;
    let vote = |principal: Principal| Vote {
        sub: &who.sub,
        principal,
        email: who.email.as_deref(),
        username: who.username.as_deref(),
        verdict: request.decision,
        comment: request.comment.as_deref(),
        feedback: request.feedback.as_ref(),
        at: now,
    };
    let attempt = |vote, completion| DecisionAttempt {
        ctx,
        store,
        approval: &approval,
        who,
        request: &request,
        vote,
        prior: PriorApproval::of_others(&votes, &who.sub),
        completion,
    };
    match step {
        Step::Complete { verdict, principal } => attempt(vote(principal), Completion::Decides).run(verdict).await,
        Step::Record { principal, required, .. } => {
            let vote = vote(principal);
            match record_vote(store, id, who, &vote, mine.is_none(), required).await? {
                Recorded::Pending(progress) => respond(id, ApprovalStatus::Pending, None, progress),
                Recorded::QuorumReached => attempt(vote, Completion::JoinsQuorum).run(Verdict::Approve).await,
            }
        }
    }
}

/// What recording a vote that does not decide by itself came to.
enum Recorded {
    Pending(Progress),
    /// Another approver voted at the same moment and the quorum is met now.
    QuorumReached,
}

/// Records the vote (unless it is on record already) and counts again: another approver may have voted at
/// the same moment. If the quorum is met now, this request tries to deliver it too (the claim keeps that
/// exactly-once).
async fn record_vote(
    store: &Store,
    id: &ApprovalId,
    who: &Identity,
    vote: &Vote<'_>,
    new: bool,
    required: u32,
) -> Result<Recorded, ApiError> {
    if new {
        store.record_vote(id, vote).await?;
    }
    let votes = store.votes(id).await?;
    if !votes.iter().any(|v| v.sub == who.sub) {
        // Someone satisfied the same principal at the same moment: deciding again places this vote anew.
        return Err(ApiError::InProgress);
    }
    let approvals = approvals_so_far(&votes);
    Ok(if approvals < required { Recorded::Pending(Progress { approvals, required }) } else { Recorded::QuorumReached })
}

pub(super) fn respond(
    id: &ApprovalId,
    status: ApprovalStatus,
    verdict: Option<Verdict>,
    progress: Progress,
) -> Result<Response, ApiError> {
    super::json(200, &DecisionResponse { id: id.to_string(), status, verdict, progress })
}
