//! The cron's sweeps in SQL: expiry, stale leases, retention. Each statement touches a bounded batch (the
//! cron runs every 5 minutes; a backlog drains over runs instead of one statement running into D1's limits).

use super::decision::{ATTEMPT_STATUS, ON_EXPIRY_ATTEMPT};
use super::{SqlArg, SqlCond};

/// Rows one cron step touches at most per run.
pub const CRON_BATCH: i64 = 500;
/// Old events one run deletes at most.
pub const RETENTION_BATCH: i64 = 500;

/// The open approvals past their deadline that one run closes (?1 now, ?2 batch size): past the task's
/// deadline (with an outcome on expiry, ringi answers between the approvers' and the task's), pending, or
/// claimed under a lease that ran out.
pub const DUE: &str = "SELECT id FROM approvals WHERE COALESCE(task_expires_at, expires_at) <= ?1
   AND (status = 'pending' OR (status = 'claimed' AND claimed_until <= ?1)) ORDER BY id LIMIT ?2";

/// The parameters of [`DUE`] (and of every statement that selects through it).
pub fn due_args(now: i64) -> Vec<SqlArg> {
    vec![SqlArg::Int(now), SqlArg::Int(CRON_BATCH)]
}

/// Closes the due approvals (token dropped): `expired`, or — when a callback attempt may have been
/// delivered — that attempt's verdict, unconfirmed. Their events go first in the same batch (they select the
/// same approvals while these are still open).
pub fn expire_due(now: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approvals SET
               status = CASE WHEN attempt_verdict IS NULL THEN 'expired' ELSE {ATTEMPT_STATUS} END,
               decision = CASE WHEN attempt_verdict IS NULL THEN decision ELSE {ATTEMPT_STATUS} END,
               confirmed = CASE WHEN attempt_verdict IS NULL THEN 1 ELSE 0 END, {ON_EXPIRY_ATTEMPT},
               task_token = NULL, claim_id = NULL, claimed_until = NULL, decided_at = expires_at
             WHERE id IN ({DUE})"
        ),
        args: due_args(now),
    }
}

/// Closes the inbox rows of expired approvals: open rows are keyed by expiry, so the due ones are exactly
/// those with `sort_at <= now`.
pub fn close_due_inboxes(now: i64) -> SqlCond {
    SqlCond {
        sql: "UPDATE approval_principals SET open = 0
             WHERE rowid IN (SELECT rowid FROM approval_principals WHERE open = 1 AND sort_at <= ?1 LIMIT ?2)"
            .into(),
        args: vec![SqlArg::Int(now), SqlArg::Int(CRON_BATCH * 4)],
    }
}

/// Claims whose holder died (lease over) go back to pending (their attempt record stays).
pub fn release_stale_claims(now: i64) -> SqlCond {
    SqlCond {
        sql: "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL
             WHERE id IN (SELECT id FROM approvals WHERE status = 'claimed' AND claimed_until <= ?1 LIMIT ?2)"
            .into(),
        args: vec![SqlArg::Int(now), SqlArg::Int(CRON_BATCH)],
    }
}

/// The closed approvals decided before ?1 whose retention is over, one batch.
pub fn purgeable() -> String {
    format!(
        "SELECT id FROM approvals WHERE status IN ('approved', 'rejected', 'expired') AND decided_at < ?1 \
         ORDER BY id LIMIT {CRON_BATCH}"
    )
}

/// The deletes of one purge, in batch order (after the `purged` events, which select [`purgeable`] too):
/// the approvals' schedules, votes, principals, the approvals (index [`PURGE_APPROVALS`]: its changed rows
/// are the count purged), then registration counters of windows before `rates_before`.
pub fn purge(before: i64, rates_before: i64) -> Vec<SqlCond> {
    let old = purgeable();
    let of = |table: &str, col: &str| SqlCond {
        sql: format!("DELETE FROM {table} WHERE {col} IN ({old})"),
        args: vec![SqlArg::Int(before)],
    };
    vec![
        of("approval_schedule", "approval_id"),
        of("decisions", "approval_id"),
        of("approval_principals", "approval_id"),
        of("approvals", "id"),
        SqlCond {
            sql: format!(
                "DELETE FROM registration_rate WHERE rowid IN
                   (SELECT rowid FROM registration_rate WHERE window_start < ?1 LIMIT {})",
                CRON_BATCH * 4
            ),
            args: vec![SqlArg::Int(rates_before)],
        },
    ]
}

/// Where in [`purge`]'s statements the approvals' delete is.
pub const PURGE_APPROVALS: usize = 3;

/// The audit retention: events that happened before `before`, oldest first, one batch. Independent of the
/// approvals' purge: events outlive their approval.
pub fn purge_events(before: i64) -> SqlCond {
    SqlCond {
        sql: "DELETE FROM approval_events WHERE seq IN
               (SELECT seq FROM approval_events WHERE at < ?1 ORDER BY at, seq LIMIT ?2)"
            .into(),
        args: vec![SqlArg::Int(before), SqlArg::Int(RETENTION_BATCH)],
    }
}
