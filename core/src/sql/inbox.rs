//! The inbox in SQL: one ordered index range per principal, in the order and after the cursor of
//! `crate::domain::inbox` (the rule both backends page by).

use super::{SqlArg, SqlCond};
use crate::domain::inbox::{Cursor, InboxFilter};

/// The inbox SQL: `?1..?k` are the caller's principal keys, then bound, cursor (`sort_at`, id) and limit.
///
/// One ordered index range per principal, each stopped after `limit` rows, merged with UNION (an approval
/// reached through two principals has the same `sort_at` on both rows, so UNION removes the duplicate).
/// The work is O(principals × limit), however many approvals the caller has pending.
pub fn query(principals: usize, pending: bool) -> String {
    let (open, cmp, order) = if pending { (1, ">", "ASC") } else { (0, "<", "DESC") };
    let k = principals;
    let (bound, c_at, c_id, limit) = (k + 1, k + 2, k + 3, k + 4);
    let bound_cmp = if pending { ">" } else { "<=" };
    let ranges = (1..=k)
        .map(|i| {
            format!(
                "SELECT * FROM (SELECT approval_id, sort_at FROM approval_principals
                   WHERE pkey = ?{i} AND open = {open} AND sort_at {bound_cmp} ?{bound}
                     AND (sort_at {cmp} ?{c_at} OR (sort_at = ?{c_at} AND approval_id {cmp} ?{c_id}))
                   ORDER BY sort_at {order}, approval_id {order} LIMIT ?{limit})"
            )
        })
        .collect::<Vec<_>>()
        .join("\n UNION ");
    let approvals = crate::domain::vote::APPROVALS_SO_FAR_SQL;
    // '' while one of the caller's seats holds a slot, else where the caller's slot went (delegation.rs).
    let keys = (1..=k).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    let delegated = format!(
        "(SELECT MIN(COALESCE(p.delegated_to, '')) FROM approval_principals p
           WHERE p.approval_id = a.id AND p.pkey IN ({keys}))"
    );
    format!(
        "WITH mine AS ({ranges})
         SELECT a.id, a.status, a.confirmed, a.title, a.summary, a.quorum, a.approver_count, a.context_json,
                a.created_at, a.expires_at, a.decided_at, mine.sort_at, a.escalated_at,
                a.requested_by_json, a.allow_self_approval, a.decided_on_expiry,
                {approvals} AS approvals, {delegated} AS delegated_to
         FROM mine JOIN approvals a ON a.id = mine.approval_id
         ORDER BY mine.sort_at {order}, a.id {order} LIMIT ?{limit}"
    )
}

/// One page of the inbox of the caller with principal keys `keys`, after `cursor`, `limit` rows at most.
/// Pending items count until their expiry (`now`).
pub fn page(keys: &[String], filter: InboxFilter, now: i64, cursor: Option<&Cursor>, limit: usize) -> SqlCond {
    let pending = filter == InboxFilter::Pending;
    let start = Cursor::start(filter);
    let c = cursor.unwrap_or(&start);
    let mut args: Vec<SqlArg> = keys.iter().map(|k| SqlArg::from(k.as_str())).collect();
    args.extend([
        SqlArg::Int(if pending { now } else { i64::MAX / 2 }),
        SqlArg::Int(c.sort_at),
        SqlArg::from(c.id.as_str()),
        SqlArg::Int(limit as i64),
    ]);
    SqlCond { sql: query(keys.len(), pending), args }
}
