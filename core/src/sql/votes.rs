//! Votes and the quorum in SQL: an approver's vote (once per voter: `decisions` is keyed by approval and
//! sub), and the guessed first round trip of a decision, which claims or votes in the same transaction that
//! loads the approval, under the rules the request is later checked against in Rust
//! (`crate::domain::quorum`, `crate::domain::rules::Guard::NotRequester`).

use super::{SqlArg, SqlCond};
use crate::base::status::Verdict;

/// One approver's decision as `decisions` stores it.
#[derive(Debug, Clone, Copy)]
pub struct VoteRow<'a> {
    pub sub: &'a str,
    /// The listed principal's key the vote satisfies (an approval) or names (a rejection).
    pub principal: &'a str,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub verdict: Verdict,
    pub comment: Option<&'a str>,
    /// The form's answers as JSON text.
    pub feedback_json: Option<&'a str>,
    pub at: i64,
}

/// Whether a vote lands whatever happened to its seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seat {
    /// The vote as delivered: recorded whatever happened to its seat since (the decision went out under it).
    Any,
    /// A vote that does not decide: recorded only while a seat still holds the slot it goes through (a
    /// reassignment may have removed it since the load; the vote then lands nowhere).
    Held,
}

/// The vote's insert: ?1 approval id, ?2 sub, ?3 principal, ?4 email, ?5 username, ?6 verdict, ?7 comment, ?8
/// feedback, ?9 at. `INSERT OR IGNORE`: a voter's second vote changes nothing.
pub fn vote(id: &str, v: &VoteRow<'_>, seat: Seat) -> SqlCond {
    let condition = match seat {
        Seat::Any => "",
        Seat::Held => {
            "WHERE EXISTS (SELECT 1 FROM approval_principals p WHERE p.approval_id = ?1
               AND COALESCE(p.slot, p.pkey) = ?3 AND p.delegated_to IS NULL)"
        }
    };
    SqlCond {
        sql: format!(
            "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
               feedback_json, at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 {condition}"
        ),
        args: vec![
            SqlArg::from(id),
            SqlArg::from(v.sub),
            SqlArg::from(v.principal),
            SqlArg::opt(v.email),
            SqlArg::opt(v.username),
            SqlArg::from(v.verdict.as_str()),
            SqlArg::opt(v.comment),
            SqlArg::opt(v.feedback_json),
            SqlArg::Int(v.at),
        ],
    }
}

/// The caller (principal keys ?8, verified email `email`) is not a requester of the row `approvals`, or
/// requesters may decide (a requester neither takes the claim nor votes; a caller without a verified email
/// counts as any requester named by email).
fn not_requester(email: &str) -> String {
    format!(
        "(approvals.allow_self_approval = 1 OR (NOT EXISTS (SELECT 1 FROM json_each(approvals.requested_by_json) r
           WHERE r.value IN (SELECT value FROM json_each(?8)))
         AND ({email} IS NOT NULL OR NOT EXISTS (SELECT 1 FROM json_each(approvals.requested_by_json) r
           WHERE r.value LIKE 'email:%'))))"
    )
}

/// The listed principal a vote through the seat `p` satisfies (a delegate's seat stands in for its slot).
const SLOT: &str = "COALESCE(p.slot, p.pkey)";

/// The approvals the quorum of the row `approvals` needs (`Quorum::required`).
const REQUIRED: &str = "(CASE approvals.quorum WHEN 'any' THEN 1 WHEN 'all' THEN MAX(approvals.approver_count, 1) \
     ELSE CAST(approvals.quorum AS INTEGER) END)";

/// The conditions a guessed claim adds to [`super::decision::claim`] (its ?3 approval, ?5 verdict, ?6 sub),
/// with ?8 the caller's keys (JSON array) and ?9 their verified email: the caller holds a slot that was not
/// handed on, is not a requester, the approval has no form and asks for no particular sign-in (whose check,
/// `crate::domain::step_up`, is Rust's: such an approval is loaded first), and the verdict decides — a rejection, or an
/// approval that satisfies a listed principal nobody else satisfied, from a person who did not approve under
/// another account, and completes the quorum; never when the caller voted the other way.
pub fn guessed_claim_condition(keys_json: &str, email: Option<&str>) -> SqlCond {
    let others = "FROM decisions d WHERE d.approval_id = ?3 AND d.decision = 'approve' AND d.sub != ?6";
    let sql = format!(
        "AND form_json = '[]' AND require_sign_in_json IS NULL AND EXISTS (SELECT 1 FROM approval_principals p
           WHERE p.approval_id = ?3 AND p.delegated_to IS NULL AND p.pkey IN (SELECT value FROM json_each(?8)))
         AND {not_requester}
         AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?3 AND d.sub = ?6 AND d.decision != ?5)
         AND (?5 = 'reject' OR (
           EXISTS (SELECT 1 FROM approval_principals p JOIN json_each(?8) k ON k.value = p.pkey
             WHERE p.approval_id = ?3 AND p.delegated_to IS NULL
               AND NOT EXISTS (SELECT 1 {others} AND d.principal = {SLOT}))
           AND NOT EXISTS (SELECT 1 {others} AND ?9 IS NOT NULL AND lower(d.email) = lower(?9))
           AND (SELECT COUNT(DISTINCT d.principal) {others}) + 1 >= {REQUIRED}))",
        not_requester = not_requester("?9")
    );
    SqlCond { sql, args: vec![SqlArg::from(keys_json), SqlArg::opt(email)] }
}

/// A guessed approval that does not complete the quorum.
#[derive(Debug, Clone, Copy)]
pub struct GuessedVote<'a> {
    pub sub: &'a str,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub at: i64,
    pub now: i64,
    /// The caller's principal keys as a JSON array, in the order the quorum rules try them.
    pub keys_json: &'a str,
    pub verdict: Verdict,
}

/// The caller's approval that does not complete the quorum, as `crate::domain::quorum::next_step` places it:
/// on the first of the caller's keys that is listed and not satisfied yet, unless the caller voted already or
/// their verified email approved under another account; only on an open approval without a form or a sign-in
/// requirement.
pub fn guessed_vote(id: &str, g: &GuessedVote<'_>) -> SqlCond {
    let sql = format!(
        "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
           feedback_json, at)
         SELECT ?1, ?2, {SLOT}, ?3, ?4, 'approve', ?5, NULL, ?6
         FROM approval_principals p JOIN json_each(?8) k ON k.value = p.pkey
           JOIN approvals ON approvals.id = p.approval_id
         WHERE p.approval_id = ?1 AND p.delegated_to IS NULL AND ?9 = 'approve' AND approvals.form_json = '[]'
           AND approvals.require_sign_in_json IS NULL
           AND approvals.expires_at > ?7 AND approvals.task_token IS NOT NULL
           AND (approvals.status = 'pending' OR (approvals.status = 'claimed' AND approvals.claimed_until <= ?7))
           AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?1 AND d.sub = ?2)
           AND {not_requester}
           AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?1 AND d.decision = 'approve'
             AND (d.principal = {SLOT} OR (?3 IS NOT NULL AND lower(d.email) = lower(?3))))
           AND (SELECT COUNT(DISTINCT d.principal) FROM decisions d
             WHERE d.approval_id = ?1 AND d.decision = 'approve') + 1 < {REQUIRED}
         ORDER BY k.key LIMIT 1",
        not_requester = not_requester("?3")
    );
    let args = vec![
        SqlArg::from(id),
        SqlArg::from(g.sub),
        SqlArg::opt(g.email),
        SqlArg::opt(g.username),
        SqlArg::opt(g.comment),
        SqlArg::Int(g.at),
        SqlArg::Int(g.now),
        SqlArg::from(g.keys_json),
        SqlArg::from(g.verdict.as_str()),
    ];
    SqlCond { sql, args }
}
