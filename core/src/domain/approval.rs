//! The approval lifecycle and the rules for accepting a decision (pure; storage applies them atomically).
//!
//! `pending → claimed → approved | rejected`, `pending → expired`, `claimed → pending` (lease expired or
//! the callback failed transiently), and `claimed | pending → decided_unconfirmed` when Step Functions says
//! the task is closed after a callback of ours that may have been delivered: the workflow most likely
//! resumed with that verdict, but Step Functions never confirmed it. Only the holder of a live claim may
//! call Step Functions.

use crate::base::error::ApiError;
use crate::base::status::ApprovalStatus;

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
        ApprovalStatus::Claimed => match s.claimed_until {
            Some(until) if until > now => Err(ApiError::claimed_until(until, now)),
            _ => Ok(()),
        },
        ApprovalStatus::Pending => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::status::Verdict;
    use crate::domain::quorum::Quorum;

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
        assert_eq!(
            check_decidable(&st(ApprovalStatus::Claimed, Some(600)), 500),
            Err(ApiError::InProgress { retry_after: 1 })
        );
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
