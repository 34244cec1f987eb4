//! The approval lifecycle and the rules for accepting a decision (pure; storage applies them atomically).
//!
//! `pending → claimed → approved | rejected`, `pending → expired`, `claimed → pending` (lease expired or
//! the callback failed transiently), and `claimed | pending → decided_unconfirmed` when Step Functions says
//! the task is closed after a callback of ours that may have been delivered: the workflow most likely
//! resumed with that verdict, but Step Functions never confirmed it. Only the holder of a live claim may
//! call Step Functions.

use serde::{Deserialize, Serialize};

use crate::base::error::{ApiError, CorruptValue};
// Kept importable from here: the quorum rules moved to their own module.
pub use crate::domain::quorum::{next_step, next_step_seated, CastApproval, Quorum, Step};

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

    /// The status and verdict of a D1 row, as [`ApprovalStatus::from_stored`], with the row's `confirmed`
    /// column as D1 hands numbers over (a float).
    pub fn from_row(status: &str, confirmed: f64) -> Result<(Self, Option<Verdict>), CorruptValue> {
        let exact = confirmed.fract() == 0.0 && confirmed.is_finite();
        let confirmed = if exact { confirmed as i64 } else { -1 };
        Self::from_stored(status, confirmed).map_err(|e| CorruptValue::new("approvals.status", e))
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

impl std::fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

    /// A stored verdict (`decisions.decision`, `approvals.attempt_verdict`); anything else is corrupt.
    pub fn from_stored(column: &'static str, s: &str) -> Result<Self, CorruptValue> {
        Self::parse(s).ok_or_else(|| CorruptValue::new(column, s))
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
            Err(ApiError::AlreadyDecided(s.status))
        }
        ApprovalStatus::Expired => Err(ApiError::Expired),
        _ if s.expires_at <= now => Err(ApiError::Expired),
        ApprovalStatus::Claimed if s.claimed_until.is_some_and(|t| t > now) => Err(ApiError::InProgress),
        ApprovalStatus::Pending | ApprovalStatus::Claimed => Ok(()),
    }
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
            Err(ApiError::AlreadyDecided(ApprovalStatus::Approved))
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
        assert_eq!(ApprovalStatus::from_row("rejected", 0.0), Ok((DecidedUnconfirmed, Some(Verdict::Reject))));
        assert!(ApprovalStatus::from_row("pending", 0.5).is_err(), "D1 hands over floats: a fraction is corrupt");
        assert!(Quorum::from_stored("most").is_err() && Verdict::from_stored("decisions.decision", "maybe").is_err());
        assert_eq!(serde_json::to_string(&DecidedUnconfirmed).unwrap(), "\"decided_unconfirmed\"");
        assert_eq!(ApprovalStatus::parse("decided_unconfirmed"), Some(DecidedUnconfirmed));
        assert!(DecidedUnconfirmed.is_final());
        assert_eq!(DecidedUnconfirmed.effective(1_000, 5_000), DecidedUnconfirmed, "final: expiry does not hide it");
        assert_eq!(
            check_decidable(&st(DecidedUnconfirmed, None), 1),
            Err(ApiError::AlreadyDecided(DecidedUnconfirmed))
        );
    }
}
