//! `POST /api/v1/approvals/{id}/decision`: approver? → validate → vote (quorum) → claim (records the
//! attempt) → callback → final write (design.md §6; what each failure leaves: faults.md); the last three steps are
//! [`DecisionAttempt`].

use ringi_core::api::decision::{DecisionRequest, PriorApproval};
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::delegation::may_view;
use ringi_core::domain::quorum::next_step_seated;
use ringi_core::domain::quorum::Step;
use ringi_core::domain::rules;
use ringi_core::domain::vote::Progress;
use ringi_core::domain::vote::{approvals_so_far, cast_approvals};
use ringi_core::{ApiError, ApprovalId};
use worker::{Request, Response};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::domain::vote::RecordedVote;

use super::decision_attempt::{give_back, respond, Completion, DecisionAttempt};
use super::http::Ctx;
use crate::platform::{now_ms, random_bytes};
use crate::store::{ApprovalStore, ClaimRequest, Guess, Loaded, Opened, Store, Vote};

pub async fn post(
    req: &mut Request,
    ctx: &Ctx,
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
) -> Result<Response, ApiError> {
    let body = super::http::body_bytes(req).await?;
    // Checked after the approver check, as before: a non-approver learns nothing from a 400.
    let parsed = DecisionRequest::parse(&body);
    let now = now_ms();
    let claim_id = URL_SAFE_NO_PAD.encode(random_bytes::<12>());
    let by = who.email.clone().or_else(|| who.username.clone()).unwrap_or_else(|| who.sub.clone());
    let keys: Vec<String> = who.principals().iter().map(Principal::key).collect();
    let claim = ClaimRequest {
        claim_id: &claim_id,
        now,
        until: now + ctx.cfg.claim_lease_ms,
        verdict: parsed.as_ref().map_or(Verdict::Approve, |r| r.decision),
        sub: &who.sub,
        by: &by,
        keys: serde_json::Value::from(keys).to_string(),
        guards: Vec::new(),
    };
    // Feedback is checked against the approval's form, which only the load brings: no guess with feedback.
    let guess = parsed.as_ref().ok().filter(|r| r.feedback.as_ref().is_none_or(|f| f.is_empty())).map(|r| Guess {
        claim: &claim,
        email: who.email.as_deref(),
        username: who.username.as_deref(),
        comment: r.comment.as_deref(),
        at: now,
    });
    let opened = match store.open_decision(id, guess.as_ref()).await {
        Ok(o) => o,
        Err(e) => {
            // The guess may have taken the claim with its answer lost: nothing was sent under it.
            if guess.is_some() {
                return Err(give_back(ctx, store, id, &claim_id, e).await);
            }
            return Err(e);
        }
    };
    decide(ctx, store, who, id, parsed, &claim, opened).await
}

/// The decision once its first round trip is back: the checks of the request against the approval as it was,
/// then the step the quorum rules give. A claim the first round trip took that the checks refuse is released.
async fn decide(
    ctx: &Ctx,
    store: &Store,
    who: &Identity,
    id: &ApprovalId,
    parsed: Result<DecisionRequest, ApiError>,
    claim: &ClaimRequest<'_>,
    opened: Opened,
) -> Result<Response, ApiError> {
    let Opened { loaded, claimed, voted, votes_after } = opened;
    let release_unused = |e: ApiError| async {
        match claimed {
            Some(_) => give_back(ctx, store, id, claim.claim_id, e).await,
            None => e,
        }
    };
    let checked = check(loaded, who, parsed);
    let (Loaded { approval, seats, votes, .. }, request) = match checked {
        Ok(v) => v,
        Err(e) => return Err(release_unused(e).await),
    };
    let mine = votes.iter().find(|v| v.sub == who.sub);
    let step = match mine.filter(|v| v.verdict != request.decision) {
        Some(_) => Err(ApiError::AlreadyVoted),
        None => next_step_seated(request.decision, approval.required(), &seats, who, &cast_approvals(&votes)),
    };
    let step = match step {
        Ok(s) => s,
        Err(e) => return Err(release_unused(e).await),
    };
    let vote = |principal: Principal| Vote {
        sub: &who.sub,
        principal,
        email: who.email.as_deref(),
        username: who.username.as_deref(),
        verdict: request.decision,
        comment: request.comment.as_deref(),
        feedback: request.feedback.as_ref(),
        at: claim.now,
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
        claim,
    };
    match step {
        Step::Complete { verdict, principal } => {
            attempt(vote(principal), Completion::Decides).run(verdict, claimed).await
        }
        Step::Record { principal, required, .. } => {
            if claimed.is_some() {
                // The guess took the claim for a vote the rules say does not decide: give it back.
                let _ = store.release(id, claim.claim_id, true).await;
            }
            let vote = vote(principal);
            // The first round trip recorded the vote (or found it) and re-read the votes, unless its guess did
            // not apply.
            let counted = match votes_after.filter(|_| voted || mine.is_some()) {
                Some(after) => count(after, who, required)?,
                None => record_vote(store, id, who, &vote, mine.is_none(), required).await?,
            };
            match counted {
                Recorded::Pending(progress) => respond(id, ApprovalStatus::Pending, None, progress),
                Recorded::QuorumReached => attempt(vote, Completion::JoinsQuorum).run(Verdict::Approve, None).await,
            }
        }
    }
}

/// The approval and the request, if `ringi_core::domain::rules::decide` lets this caller decide it (an approver — else
/// the same 404 as for none —, not a requester, a seat that still holds, decidable now) and the request is
/// valid against its form. The first round trip's SQL applied the same guards to the claim and the vote.
fn check(
    loaded: Option<Loaded>,
    who: &Identity,
    parsed: Result<DecisionRequest, ApiError>,
) -> Result<(Loaded, DecisionRequest), ApiError> {
    let loaded = loaded.ok_or(ApiError::NotFound)?;
    let now = now_ms();
    // A non-approver and a requester learn nothing from a 400: the rules first, then the body.
    if !may_view(&loaded.seats, who) {
        return Err(ApiError::NotFound);
    }
    if let Some(refused) = loaded.approval.refusal(who) {
        return Err(refused);
    }
    let request = parsed?;
    request.validate_against(&loaded.approval.form)?;
    rules::decide(&loaded.snapshot(), who, now)?;
    Ok((loaded, request))
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
    count(store.votes(id).await?, who, required)
}

/// Counts the votes after this caller's was recorded.
fn count(votes: Vec<RecordedVote>, who: &Identity, required: u32) -> Result<Recorded, ApiError> {
    if !votes.iter().any(|v| v.sub == who.sub) {
        // Someone satisfied the same principal at the same moment: deciding again places this vote anew.
        return Err(ApiError::changed_meanwhile());
    }
    let approvals = approvals_so_far(&votes);
    Ok(if approvals < required { Recorded::Pending(Progress { approvals, required }) } else { Recorded::QuorumReached })
}
