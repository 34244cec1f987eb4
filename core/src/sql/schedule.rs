//! A registration's own schedule in SQL (`crate::domain::schedule`): a cron run takes the due entries of open
//! approvals under its lease, acts (mails), then marks them done under that lease — a failed mark costs at
//! most one more mail, never a lost one; a lease that runs out gives the entries to the next run.

use super::{SqlArg, SqlCond};

/// Entries one cron run takes at most (each may mean a mail).
pub const SCHEDULE_BATCH: i64 = 50;
/// Closed approvals' due entries one run marks skipped at most.
pub const SKIP_BATCH: i64 = 500;

/// The open approvals an entry may act on (`a` is the approval), with `now` as parameter `p`.
pub fn open(p: &str) -> String {
    format!("a.status IN ('pending', 'claimed') AND a.expires_at > {p}")
}

/// Marks the due entries of closed approvals skipped.
pub fn skip_closed(now: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approval_schedule SET done_at = ?1, outcome = 'skipped'
             WHERE rowid IN (SELECT s.rowid FROM approval_schedule s JOIN approvals a ON a.id = s.approval_id
               WHERE s.done_at IS NULL AND s.due_at <= ?1 AND NOT ({}) LIMIT ?2)",
            open("?1")
        ),
        args: vec![SqlArg::Int(now), SqlArg::Int(SKIP_BATCH)],
    }
}

/// Takes the due entries of open approvals not under a live lease, soonest first, for `lease_ms` under
/// `lease_id`.
pub fn take(now: i64, lease_id: &str, lease_ms: i64) -> SqlCond {
    SqlCond {
        sql: format!(
            "UPDATE approval_schedule SET lease_id = ?2, lease_until = ?3
             WHERE rowid IN (SELECT s.rowid FROM approval_schedule s JOIN approvals a ON a.id = s.approval_id
               WHERE s.done_at IS NULL AND s.due_at <= ?1 AND (s.lease_until IS NULL OR s.lease_until <= ?1)
                 AND {} ORDER BY s.due_at LIMIT ?4)",
            open("?1")
        ),
        args: vec![SqlArg::Int(now), SqlArg::from(lease_id), SqlArg::Int(now + lease_ms), SqlArg::Int(SCHEDULE_BATCH)],
    }
}

/// The approvals whose entries lease ?1 holds (not done).
pub const TAKEN_APPROVALS: &str = "SELECT approval_id FROM approval_schedule WHERE lease_id = ?1 AND done_at IS NULL";

/// The entries `lease_id` holds, in due order, with what acting on them needs: the approval's escalation
/// (its entry's detail), whether it escalated already, and the verified emails of those who voted.
pub fn taken(lease_id: &str) -> SqlCond {
    SqlCond {
        sql: "SELECT s.approval_id AS id, s.seq, s.kind, a.escalated_at,
               (SELECT e.detail_json FROM approval_schedule e WHERE e.approval_id = s.approval_id
                  AND e.kind = 'escalation') AS escalation_json,
               (SELECT json_group_array(lower(d.email)) FROM decisions d WHERE d.approval_id = s.approval_id
                  AND d.email IS NOT NULL) AS voted_json
             FROM approval_schedule s JOIN approvals a ON a.id = s.approval_id
             WHERE s.lease_id = ?1 AND s.done_at IS NULL ORDER BY s.due_at, s.seq"
            .into(),
        args: vec![SqlArg::from(lease_id)],
    }
}

/// Marks entries `seqs` of approval `id` done with `outcome`, only under this run's lease.
pub fn done(id: &str, seqs: &[i64], lease_id: &str, now: i64, outcome: &str) -> SqlCond {
    SqlCond {
        sql: "UPDATE approval_schedule SET done_at = ?1, outcome = ?2, lease_id = NULL, lease_until = NULL
             WHERE approval_id = ?3 AND seq IN (SELECT value FROM json_each(?4)) AND lease_id = ?5 AND done_at IS NULL"
            .into(),
        args: vec![
            SqlArg::Int(now),
            SqlArg::from(outcome),
            SqlArg::from(id),
            SqlArg::Text(serde_json::Value::from(seqs.to_vec()).to_string()),
            SqlArg::from(lease_id),
        ],
    }
}

/// Gives approval `id`'s entries back (their mail failed): the next run takes them without waiting for the
/// lease.
pub fn release(id: &str, lease_id: &str) -> SqlCond {
    SqlCond {
        sql: "UPDATE approval_schedule SET lease_id = NULL, lease_until = NULL
             WHERE approval_id = ?1 AND lease_id = ?2 AND done_at IS NULL"
            .into(),
        args: vec![SqlArg::from(id), SqlArg::from(lease_id)],
    }
}
