//! The outcome on expiry in SQL: which approvals are due (`crate::domain::on_expiry`). ringi's claim and its
//! final writes are the decision path's ([`super::decision::system_claim`]).

use super::{SqlArg, SqlCond};
use crate::domain::vote::APPROVALS_SO_FAR_SQL;

/// Approvals one cron run answers at most (each is a Step Functions call); the rest wait for the next run.
pub const ON_EXPIRY_BATCH: i64 = 25;

/// Open approvals with an outcome on expiry past their approvers' deadline and before their task's, soonest
/// first: pending ones, and claimed ones whose claim holder died (lease over).
pub fn due(now: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "SELECT id, task_token, on_expiry, expires_at, aws_account, aws_region, quorum, approver_count,
                    request_sha256, {APPROVALS_SO_FAR_SQL} AS approvals
             FROM approvals a WHERE on_expiry != 'none' AND status IN ('pending', 'claimed') AND task_token IS NOT NULL
               AND expires_at <= ?1 AND task_expires_at > ?1
               AND (status = 'pending' OR claimed_until <= ?1)
             ORDER BY expires_at LIMIT {ON_EXPIRY_BATCH}"
        ),
        args: vec![SqlArg::Int(now)],
    }
}
