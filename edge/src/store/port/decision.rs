//! What the decision path and registration hand to storage and get back: the registrant, an insert's
//! outcome, a vote, a claim, the first round trip's guess and findings, a failed callback.

use ringi_core::base::principal::Principal;
use ringi_core::base::status::Verdict;
use ringi_core::domain::audit::Actor;
use ringi_core::domain::rules::Guard;
use ringi_core::domain::vote::RecordedVote;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::rows::{Attempt, Loaded};

/// The authenticated registrant: what approvers see as "Registered by", and its registration rate.
pub struct Registrant<'a> {
    pub label: &'a str,
    pub rate_per_minute: u32,
}

/// What [`ApprovalStore::insert`](super::ApprovalStore::insert) did.
pub enum Inserted {
    /// `routed`: the slots out-of-office routing handed on, as (absent approver, stand-in).
    Created { routed: Vec<(Principal, Principal)> },
    /// The ID or the task token is taken: nothing was written (also when an earlier try of this very insert
    /// went through but its answer was lost: the caller then finds the same request, as for a redelivery).
    Exists,
    /// The credential is over its rate: nothing was written.
    RateLimited { retry_after: u32 },
}

/// An existing registration, as far as a new one is compared with it.
#[derive(Debug, Deserialize)]
pub struct Registered {
    pub id: String,
    pub token_sha256: String,
    pub request_sha256: Option<String>,
    pub expires_at: f64,
}

/// One approver's decision as stored in `decisions`.
pub struct Vote<'a> {
    pub sub: &'a str,
    /// The listed principal it satisfies (an approval) or names (a rejection).
    pub principal: Principal,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub verdict: Verdict,
    pub comment: Option<&'a str>,
    pub feedback: Option<&'a Map<String, Value>>,
    pub at: i64,
}

/// Who takes a claim: the claim id, the lease and the attempt it records.
#[derive(Clone)]
pub struct ClaimRequest<'a> {
    pub claim_id: &'a str,
    pub now: i64,
    pub until: i64,
    pub verdict: Verdict,
    pub sub: &'a str,
    /// Shown as "attempted by" if the attempt ends unconfirmed.
    pub by: &'a str,
    /// The caller's principal keys as a JSON array, in the order the quorum rules try them.
    pub keys: String,
    /// What the claim of an approval that completes the quorum commits under
    /// (`ringi_core::domain::rules::completion_guards`; empty for any other claim): both backends' claims commit
    /// only while they hold (D1 also makes them in the SQL of a guessed first round trip).
    pub guards: Vec<Guard>,
}

/// What a decision request most likely comes to, written in its first round trip (see
/// [`ApprovalStore::open_decision`](super::ApprovalStore::open_decision)). Only for requests without feedback, on approvals without a form: the form is
/// the one check the SQL cannot make.
pub struct Guess<'a> {
    pub claim: &'a ClaimRequest<'a>,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub at: i64,
}

/// What the first round trip of a decision found and did.
pub struct Opened {
    /// The approval before this request's writes; `None`: no such approval.
    pub loaded: Option<Loaded>,
    /// The claim, if the guess took it: the attempt on record.
    pub claimed: Option<Attempt>,
    /// The caller's approval was recorded (a vote that does not complete the quorum).
    pub voted: bool,
    /// The votes after this request's writes (`None` without a guess).
    pub votes_after: Option<Vec<RecordedVote>>,
}

/// A callback that did not go through, as the event log records it.
pub struct CallbackFailure {
    pub actor: Actor,
    pub verdict: Verdict,
    /// `unavailable` (retryable), `refused` or `invalid`.
    pub class: &'static str,
    /// Step Functions' error type (`ThrottlingException`, `HTTP 500`, `network` …), never a message body.
    pub code: String,
    pub at: i64,
}

impl Vote<'_> {
    /// The voter, as the event log names them.
    pub fn actor(&self) -> Actor {
        voter(self.sub, self.email, self.username)
    }
}

pub(crate) fn voter(sub: &str, email: Option<&str>, username: Option<&str>) -> Actor {
    Actor::User { sub: sub.to_owned(), display: email.or(username).unwrap_or(sub).to_owned() }
}
