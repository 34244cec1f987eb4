//! The approval lifecycle and the rules for accepting a decision (pure; storage applies them atomically).
//!
//! `pending → claimed → approved | rejected`, `pending → expired`, `claimed → pending` (lease expired or
//! the callback failed transiently), and `claimed | pending → decided_unconfirmed` when Step Functions says
//! the task is closed after a callback of ours that may have been delivered: the workflow most likely
//! resumed with that verdict, but Step Functions never confirmed it. Only the holder of a live claim may
//! call Step Functions.

use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::principal::{Identity, Principal};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Claimed,
    Approved,
    Rejected,
    /// A callback with a verdict may have reached Step Functions and the task is closed now, but Step
    /// Functions never answered 200: the verdict is shown, marked unconfirmed. Final.
    DecidedUnconfirmed,
    Expired,
}

/// A stored `(status, confirmed)` pair that no lifecycle state maps to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt stored approval state: status {status:?}, confirmed {confirmed}")]
pub struct CorruptState {
    pub status: String,
    pub confirmed: i64,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Claimed => "claimed",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::DecidedUnconfirmed => "decided_unconfirmed",
            Self::Expired => "expired",
        }
    }

    /// The domain state of a D1 row. `approvals.status` keeps its original CHECK constraint (a D1 table
    /// cannot be rebuilt without cascading deletes), so "unconfirmed" is `approved`/`rejected` with
    /// `confirmed = 0`; the verdict is that status. Returns the status and, for decided ones, the verdict.
    pub fn from_stored(status: &str, confirmed: i64) -> Result<(Self, Option<Verdict>), CorruptState> {
        let corrupt = || CorruptState { status: status.to_owned(), confirmed };
        let s = match status {
            "pending" => Self::Pending,
            "claimed" => Self::Claimed,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "expired" => Self::Expired,
            _ => return Err(corrupt()),
        };
        let verdict = match s {
            Self::Approved => Some(Verdict::Approve),
            Self::Rejected => Some(Verdict::Reject),
            _ => None,
        };
        match (confirmed, verdict) {
            (1, _) => Ok((s, verdict)),
            (0, Some(v)) => Ok((Self::DecidedUnconfirmed, Some(v))),
            _ => Err(corrupt()),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "claimed" => Self::Claimed,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "decided_unconfirmed" => Self::DecidedUnconfirmed,
            "expired" => Self::Expired,
            _ => return None,
        })
    }

    pub fn is_final(self) -> bool {
        matches!(self, Self::Approved | Self::Rejected | Self::DecidedUnconfirmed | Self::Expired)
    }

    /// What a reader should see: a pending approval past its expiry is expired even before the cron marks
    /// it, and a claim in flight is still pending to everyone else.
    pub fn effective(self, expires_at: i64, now: i64) -> Self {
        match self {
            Self::Pending | Self::Claimed if expires_at <= now => Self::Expired,
            Self::Claimed => Self::Pending,
            s => s,
        }
    }
}

/// How many approvers must approve. Any single rejection rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    Any,
    All,
    N(u32),
}

impl Quorum {
    /// Number of distinct approvers needed, given the listed principals.
    pub fn required(self, principals: usize) -> u32 {
        match self {
            Self::Any => 1,
            Self::All => principals.max(1) as u32,
            Self::N(n) => n.max(1),
        }
    }

    pub fn as_string(self) -> String {
        match self {
            Self::Any => "any".into(),
            Self::All => "all".into(),
            Self::N(n) => n.to_string(),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "any" => Some(Self::Any),
            "all" => Some(Self::All),
            n => n.parse::<u32>().ok().filter(|n| *n >= 1).map(Self::N),
        }
    }
}

impl Serialize for Quorum {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::N(n) => s.serialize_u32(*n),
            other => s.serialize_str(&other.as_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Quorum {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u32),
            S(String),
        }
        let bad = || serde::de::Error::custom("quorum must be \"any\", \"all\" or a positive integer");
        match Raw::deserialize(d)? {
            Raw::N(n) if n >= 1 => Ok(Self::N(n)),
            Raw::N(_) => Err(bad()),
            Raw::S(s) => Self::parse(&s).ok_or_else(bad),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Approve,
    Reject,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Self::Approve),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }

    pub fn final_status(self) -> ApprovalStatus {
        match self {
            Self::Approve => ApprovalStatus::Approved,
            Self::Reject => ApprovalStatus::Rejected,
        }
    }
}

/// The stored state the decision rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalState {
    pub status: ApprovalStatus,
    pub expires_at: i64,
    pub claimed_until: Option<i64>,
}

/// May a decision be attempted now? Maps every non-decidable state to its 409.
pub fn check_decidable(s: &ApprovalState, now: i64) -> Result<(), ApiError> {
    match s.status {
        ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::DecidedUnconfirmed => {
            Err(ApiError::AlreadyDecided(s.status.as_str().into()))
        }
        ApprovalStatus::Expired => Err(ApiError::Expired),
        _ if s.expires_at <= now => Err(ApiError::Expired),
        ApprovalStatus::Claimed if s.claimed_until.is_some_and(|t| t > now) => Err(ApiError::InProgress),
        ApprovalStatus::Pending | ApprovalStatus::Claimed => Ok(()),
    }
}

/// What accepting this caller's verdict means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An approval that does not complete the quorum yet: record it (as satisfying `principal`), no callback.
    Record { principal: Principal, approvals: u32, required: u32 },
    /// This verdict decides the task: claim, then call Step Functions. `principal`: what an approval
    /// satisfies (a rejection names the caller's first matching principal).
    Complete { verdict: Verdict, principal: Principal },
}

/// An approval already recorded: who cast it and which listed principal it satisfied.
#[derive(Debug, Clone, Copy)]
pub struct CastApproval<'a> {
    pub sub: &'a str,
    /// The voter's verified email, if the token had one.
    pub email: Option<&'a str>,
    pub principal: &'a Principal,
}

/// The quorum counts listed principals, not people: each approval satisfies one still-unsatisfied listed
/// principal the caller matches (the most specific: its `sub`, then its email, then its groups), so
/// `all` over two groups needs a member of each. `all`: every listed principal; `n`: n of them; `any`: one.
/// A rejection by any matching approver decides. One person counts once even with two accounts: an approval
/// from a verified email that already approved under another `sub` is refused as already voted.
pub fn next_step(
    verdict: Verdict,
    quorum: Quorum,
    listed: &[Principal],
    who: &Identity,
    prior: &[CastApproval<'_>],
) -> Result<Step, ApiError> {
    let mine = who.principals();
    let listed: Vec<Principal> = listed.iter().map(Principal::normalized).collect();
    let matching: Vec<&Principal> = mine.iter().filter(|p| listed.contains(p)).collect();
    let Some(first) = matching.first() else { return Err(ApiError::NotFound) };
    if verdict == Verdict::Reject {
        return Ok(Step::Complete { verdict, principal: (*first).clone() });
    }
    let others: Vec<&CastApproval<'_>> = prior.iter().filter(|v| v.sub != who.sub).collect();
    if let Some(email) = &who.email {
        if others.iter().any(|v| v.email.is_some_and(|e| e.eq_ignore_ascii_case(email))) {
            return Err(ApiError::AlreadyVoted);
        }
    }
    let satisfied: Vec<&Principal> = others.iter().map(|v| v.principal).collect();
    let Some(principal) = matching.into_iter().find(|p| !satisfied.contains(p)) else {
        return Err(ApiError::AlreadySatisfied);
    };
    let mut distinct = satisfied.clone();
    distinct.sort();
    distinct.dedup();
    let required = quorum.required(listed.len());
    let approvals = distinct.len() as u32 + 1;
    Ok(if approvals >= required {
        Step::Complete { verdict, principal: principal.clone() }
    } else {
        Step::Record { principal: principal.clone(), approvals, required }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(status: ApprovalStatus, claimed_until: Option<i64>) -> ApprovalState {
        ApprovalState { status, expires_at: 1_000, claimed_until }
    }

    #[test]
    fn decidable_states() {
        assert_eq!(check_decidable(&st(ApprovalStatus::Pending, None), 500), Ok(()));
        assert_eq!(check_decidable(&st(ApprovalStatus::Pending, None), 1_000), Err(ApiError::Expired));
        assert_eq!(check_decidable(&st(ApprovalStatus::Expired, None), 1), Err(ApiError::Expired));
        assert_eq!(
            check_decidable(&st(ApprovalStatus::Approved, None), 1),
            Err(ApiError::AlreadyDecided("approved".into()))
        );
        assert_eq!(check_decidable(&st(ApprovalStatus::Claimed, Some(600)), 500), Err(ApiError::InProgress));
        // A claim whose holder died is free again once its lease ran out.
        assert_eq!(check_decidable(&st(ApprovalStatus::Claimed, Some(400)), 500), Ok(()));
    }

    #[test]
    fn effective_status_hides_claims_and_shows_expiry() {
        assert_eq!(ApprovalStatus::Claimed.effective(1_000, 10), ApprovalStatus::Pending);
        assert_eq!(ApprovalStatus::Pending.effective(1_000, 1_000), ApprovalStatus::Expired);
        assert_eq!(ApprovalStatus::Approved.effective(1_000, 5_000), ApprovalStatus::Approved);
    }

    fn person(sub: &str, email: Option<&str>, groups: &[&str]) -> Identity {
        Identity {
            sub: sub.into(),
            email: email.map(Into::into),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            username: None,
            scopes: vec![],
            client_id: "c".into(),
        }
    }

    fn group(g: &str) -> Principal {
        Principal::Group(g.into())
    }

    #[test]
    fn quorum_counts_listed_principals_not_people() {
        let listed = [group("eng"), group("finance")];
        let (eng1, eng2) = (person("e1", None, &["eng"]), person("e2", None, &["eng"]));
        let fin = person("f1", None, &["finance"]);
        let first = next_step(Verdict::Approve, Quorum::All, &listed, &eng1, &[]).unwrap();
        assert_eq!(first, Step::Record { principal: group("eng"), approvals: 1, required: 2 });
        let cast = [CastApproval { sub: "e1", email: None, principal: &group("eng") }];
        // A second engineer cannot stand in for finance: separation of duty holds.
        assert_eq!(next_step(Verdict::Approve, Quorum::All, &listed, &eng2, &cast), Err(ApiError::AlreadySatisfied));
        assert_eq!(
            next_step(Verdict::Approve, Quorum::All, &listed, &fin, &cast),
            Ok(Step::Complete { verdict: Verdict::Approve, principal: group("finance") })
        );
        // Any matching approver's rejection decides, satisfied or not.
        assert!(matches!(
            next_step(Verdict::Reject, Quorum::All, &listed, &eng2, &cast),
            Ok(Step::Complete { verdict: Verdict::Reject, .. })
        ));
    }

    #[test]
    fn a_vote_takes_the_most_specific_free_principal() {
        let alice = person("a", Some("alice@example.com"), &["finance"]);
        let listed = [group("finance"), Principal::Email("alice@example.com".into())];
        let step = next_step(Verdict::Approve, Quorum::All, &listed, &alice, &[]).unwrap();
        assert_eq!(
            step,
            Step::Record { principal: Principal::Email("alice@example.com".into()), approvals: 1, required: 2 }
        );
        // With her email slot taken by … herself under another account: one person, one vote.
        let cast = [CastApproval { sub: "a2", email: Some("ALICE@example.com"), principal: &listed[1] }];
        assert_eq!(next_step(Verdict::Approve, Quorum::All, &listed, &alice, &cast), Err(ApiError::AlreadyVoted));
    }

    #[test]
    fn stored_state_maps_to_the_domain() {
        use ApprovalStatus::*;
        assert_eq!(ApprovalStatus::from_stored("pending", 1), Ok((Pending, None)));
        assert_eq!(ApprovalStatus::from_stored("approved", 1), Ok((Approved, Some(Verdict::Approve))));
        assert_eq!(ApprovalStatus::from_stored("approved", 0), Ok((DecidedUnconfirmed, Some(Verdict::Approve))));
        assert_eq!(ApprovalStatus::from_stored("rejected", 0), Ok((DecidedUnconfirmed, Some(Verdict::Reject))));
        assert_eq!(ApprovalStatus::from_stored("expired", 1), Ok((Expired, None)));
        // Only a verdict can be unconfirmed; anything else is corrupt, never a silent default.
        assert!(ApprovalStatus::from_stored("pending", 0).is_err());
        assert!(ApprovalStatus::from_stored("expired", 0).is_err());
        assert!(ApprovalStatus::from_stored("approved", 2).is_err());
        assert!(ApprovalStatus::from_stored("decided_unconfirmed", 1).is_err(), "not a stored status");
        assert!(ApprovalStatus::from_stored("bogus", 1).is_err());
        assert_eq!(serde_json::to_string(&DecidedUnconfirmed).unwrap(), "\"decided_unconfirmed\"");
        assert_eq!(ApprovalStatus::parse("decided_unconfirmed"), Some(DecidedUnconfirmed));
        assert!(DecidedUnconfirmed.is_final());
        assert_eq!(DecidedUnconfirmed.effective(1_000, 5_000), DecidedUnconfirmed, "final: expiry does not hide it");
        assert_eq!(
            check_decidable(&st(DecidedUnconfirmed, None), 1),
            Err(ApiError::AlreadyDecided("decided_unconfirmed".into()))
        );
    }

    #[test]
    fn quorum_rules() {
        let listed = [group("g"), Principal::Sub("x".into()), Principal::Sub("y".into())];
        let g = person("p", None, &["g"]);
        let any = next_step(Verdict::Approve, Quorum::Any, &listed, &g, &[]).unwrap();
        assert_eq!(any, Step::Complete { verdict: Verdict::Approve, principal: group("g") });
        let two = next_step(Verdict::Approve, Quorum::N(2), &listed, &g, &[]).unwrap();
        assert_eq!(two, Step::Record { principal: group("g"), approvals: 1, required: 2 });
        let cast = [CastApproval { sub: "x", email: None, principal: &listed[1] }];
        assert!(matches!(next_step(Verdict::Approve, Quorum::N(2), &listed, &g, &cast), Ok(Step::Complete { .. })));
        // Not an approver at all: indistinguishable from a missing approval.
        let nobody = person("z", None, &[]);
        assert_eq!(next_step(Verdict::Approve, Quorum::Any, &listed, &nobody, &[]), Err(ApiError::NotFound));
    }

    #[test]
    fn quorum_wire_forms() {
        assert_eq!(serde_json::from_str::<Quorum>("\"all\"").unwrap(), Quorum::All);
        assert_eq!(serde_json::from_str::<Quorum>("2").unwrap(), Quorum::N(2));
        assert!(serde_json::from_str::<Quorum>("0").is_err());
        assert!(serde_json::from_str::<Quorum>("\"most\"").is_err());
        assert_eq!(serde_json::to_string(&Quorum::N(3)).unwrap(), "3");
        assert_eq!(Quorum::parse(&Quorum::All.as_string()), Some(Quorum::All));
    }
}
