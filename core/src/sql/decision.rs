//! The claim and the writes that close or reopen a decision (design.md §6 "Attempts"). The claim is one
//! conditional UPDATE that also records the callback attempt; its RETURNING row says who won. Every statement
//! here is conditional on the claim it acts under, so running it twice is running it once.

use super::{SqlArg, SqlCond};
use crate::base::status::Verdict;

/// SET clause that forgets the attempt record.
pub const CLEAR_ATTEMPT: &str =
    "attempt_id = NULL, attempt_verdict = NULL, attempt_sub = NULL, attempt_by = NULL, attempt_at = NULL";
/// SET clause of a write that turns the recorded attempt into the outcome: ringi's own attempt (attempt_sub
/// NULL) was the outcome on expiry.
pub const ON_EXPIRY_ATTEMPT: &str =
    "decided_on_expiry = CASE WHEN attempt_id IS NOT NULL AND attempt_sub IS NULL THEN 1 ELSE 0 END";
/// The stored status of the recorded attempt's verdict.
pub const ATTEMPT_STATUS: &str = "(CASE attempt_verdict WHEN 'reject' THEN 'rejected' ELSE 'approved' END)";
/// The columns the claim returns: the attempt on record.
pub const ATTEMPT_COLUMNS: &str = "attempt_id, attempt_verdict, attempt_sub";

/// Who takes a claim: the claim id, the lease and the attempt it records.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    pub claim_id: &'a str,
    pub now: i64,
    /// The lease's end.
    pub until: i64,
    pub verdict: Verdict,
    /// The person's sub; `None` for ringi's own attempt (the outcome on expiry).
    pub sub: Option<&'a str>,
    /// Shown as "attempted by" if the attempt ends unconfirmed.
    pub by: &'a str,
}

/// Until when a claim may be taken: a person's until the approvers' deadline, ringi's outcome on expiry until
/// the task's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    Approvers,
    Task,
}

impl Deadline {
    fn column(self) -> &'static str {
        match self {
            Self::Approvers => "expires_at",
            Self::Task => "task_expires_at",
        }
    }
}

/// The claim, with `extra` conditions: parameters ?1 claim id, ?2 lease end, ?3 approval id, ?4 now, ?5
/// verdict, ?6 sub, ?7 attempted by, then `extra_args` from ?8 on (D1 refuses a binding the statement does not
/// use: they come only with the conditions that use them). Taken while pending, or claimed under a lease that
/// ran out, or under this very claim id (a retry whose answer was lost wins again). An attempt on record is
/// kept: if it was delivered, it is what closed the task.
pub fn claim(id: &str, c: &Claim<'_>, deadline: Deadline, extra: &str, extra_args: Vec<SqlArg>) -> SqlCond {
    let deadline = deadline.column();
    let mut args = vec![
        SqlArg::from(c.claim_id),
        SqlArg::Int(c.until),
        SqlArg::from(id),
        SqlArg::Int(c.now),
        SqlArg::from(c.verdict.as_str()),
        SqlArg::opt(c.sub),
        SqlArg::from(c.by),
    ];
    args.extend(extra_args);
    SqlCond {
        sql: format!(
            "UPDATE approvals SET status = 'claimed', claim_id = ?1, claimed_until = ?2,
               attempt_id = COALESCE(attempt_id, ?1),
               attempt_verdict = CASE WHEN attempt_id IS NULL THEN ?5 ELSE attempt_verdict END,
               attempt_sub = CASE WHEN attempt_id IS NULL THEN ?6 ELSE attempt_sub END,
               attempt_by = CASE WHEN attempt_id IS NULL THEN ?7 ELSE attempt_by END,
               attempt_at = CASE WHEN attempt_id IS NULL THEN ?4 ELSE attempt_at END
             WHERE id = ?3 AND {deadline} > ?4 AND task_token IS NOT NULL
               AND (status = 'pending' OR (status = 'claimed' AND (claimed_until <= ?4 OR claim_id = ?1))) {extra}
             RETURNING {ATTEMPT_COLUMNS}"
        ),
        args,
    }
}

/// The claim of ringi itself (the outcome on expiry, `on_expiry` = `verdict`): the same conditional claim a
/// person's decision takes, until the task's deadline, recording an attempt without a sub.
pub fn system_claim(id: &str, claim_id: &str, now: i64, until: i64, verdict: Verdict) -> SqlCond {
    let c = Claim { claim_id, now, until, verdict, sub: None, by: "ringi" };
    claim(id, &c, Deadline::Task, "AND on_expiry = ?8", vec![SqlArg::from(verdict.as_str())])
}

/// The final write once Step Functions took `verdict` under `claim_id` (200): final, confirmed, token dropped.
pub fn finish(id: &str, claim_id: &str, verdict: Verdict, at: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approvals SET status = ?1, decision = ?1, confirmed = 1, decided_at = ?2, task_token = NULL,
               claim_id = NULL, claimed_until = NULL, {CLEAR_ATTEMPT} WHERE id = ?3 AND claim_id = ?4"
        ),
        args: vec![
            SqlArg::from(verdict.final_status().as_str()),
            SqlArg::Int(at),
            SqlArg::from(id),
            SqlArg::from(claim_id),
        ],
    }
}

/// The recorded attempt's verdict, unconfirmed (the task is closed after an attempt that may have been
/// delivered); ringi's own attempt marks the approval decided on expiry.
pub fn unconfirmed(id: &str, claim_id: &str, now: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approvals SET status = {ATTEMPT_STATUS}, decision = {ATTEMPT_STATUS}, confirmed = 0,
               decided_at = ?1, task_token = NULL, claim_id = NULL, claimed_until = NULL, {ON_EXPIRY_ATTEMPT}
             WHERE id = ?2 AND claim_id = ?3 AND attempt_verdict IS NOT NULL"
        ),
        args: vec![SqlArg::Int(now), SqlArg::from(id), SqlArg::from(claim_id)],
    }
}

/// Moves the approval from its approvers' pending inboxes to their decided ones.
pub fn close_inbox(id: &str, at: i64) -> SqlCond {
    SqlCond {
        sql: "UPDATE approval_principals SET open = 0, sort_at = ?1 WHERE approval_id = ?2".into(),
        args: vec![SqlArg::Int(at), SqlArg::from(id)],
    }
}

/// Nothing was delivered under the claim: pending again. `not_sent`: the attempt this claim recorded is
/// forgotten too (an earlier attempt that may have been delivered stays on record).
pub fn release(id: &str, claim_id: &str, not_sent: bool) -> SqlCond {
    let clear = |col: &str| format!("{col} = CASE WHEN ?3 = 1 AND attempt_id = ?2 THEN NULL ELSE {col} END");
    SqlCond {
        sql: format!(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL, {}
             WHERE id = ?1 AND claim_id = ?2 AND status = 'claimed'",
            ["attempt_verdict", "attempt_sub", "attempt_by", "attempt_at", "attempt_id"].map(clear).join(", ")
        ),
        args: vec![SqlArg::from(id), SqlArg::from(claim_id), SqlArg::Int(i64::from(not_sent))],
    }
}

/// Step Functions says the task is closed and no attempt of ours may have closed it: expired, under the claim.
pub fn expire(id: &str, claim_id: &str, now: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approvals SET status = 'expired', task_token = NULL, claim_id = NULL, claimed_until = NULL,
               decided_at = ?1, {CLEAR_ATTEMPT} WHERE id = ?2 AND claim_id = ?3"
        ),
        args: vec![SqlArg::Int(now), SqlArg::from(id), SqlArg::from(claim_id)],
    }
}
