//! An approval's status and a decision's verdict: values stored in both backends, sent to the SPA and named
//! in errors (the lifecycle that moves between them is `crate::domain::approval`).

use crate::base::by_name::serde_by_name;
use crate::base::corrupt::CorruptValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
serde_by_name!(
    ApprovalStatus,
    as_str,
    parse,
    "an approval status (pending, claimed, approved, rejected, decided_unconfirmed, expired)"
);

impl crate::base::json::Placeholder for ApprovalStatus {
    fn placeholder() -> Self {
        Self::Pending
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Reject,
}
serde_by_name!(Verdict, as_str, parse, "approve or reject");

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
