//! Votes, the claim, and the writes that close a decision (design.md §4, §8 "Attempts").

use ringi_core::approval::{ApprovalStatus, Verdict};
use ringi_core::principal::Principal;
use ringi_core::vote::RecordedVote;
use ringi_core::{ApiError, ApprovalId};
use serde_json::{Map, Value};

use super::rows::{self, Attempt, AttemptRow, DecisionRow, DECISION_COLUMNS};
use super::{n, opt, s, Stmt, Store};

/// SET clause that forgets the attempt record.
const CLEAR_ATTEMPT: &str =
    "attempt_id = NULL, attempt_verdict = NULL, attempt_sub = NULL, attempt_by = NULL, attempt_at = NULL";
/// The stored status of the recorded attempt's verdict.
pub(super) const ATTEMPT_STATUS: &str = "(CASE attempt_verdict WHEN 'reject' THEN 'rejected' ELSE 'approved' END)";

/// One approver's decision as stored in `decisions`.
pub struct Vote<'a> {
    pub sub: &'a str,
    /// The listed principal it satisfies (an approval) or names (a rejection).
    pub principal: Principal,
    pub email: Option<&'a str>,
    pub username: Option<&'a str>,
    pub verdict: Verdict,
    pub comment: Option<&'a str>,
    pub feedback: Option<&'a Map<String, Value>>,
    pub at: i64,
}

/// Who takes a claim: the claim id, the lease and the attempt it records.
pub struct ClaimRequest<'a> {
    pub claim_id: &'a str,
    pub now: i64,
    pub until: i64,
    pub verdict: Verdict,
    pub sub: &'a str,
    /// Shown as "attempted by" if the attempt ends unconfirmed.
    pub by: &'a str,
}

/// Moves the approval from its approvers' pending inboxes to their decided ones.
fn close_stmt(id: &ApprovalId, at: i64) -> Stmt {
    Stmt::new(
        "UPDATE approval_principals SET open = 0, sort_at = ?1 WHERE approval_id = ?2",
        vec![n(at), s(id.as_str())],
    )
}

fn vote_stmt(id: &ApprovalId, v: &Vote<'_>) -> Stmt {
    Stmt::new(
        "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
           feedback_json, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        vec![
            s(id.as_str()),
            s(v.sub),
            s(&v.principal.key()),
            opt(v.email),
            opt(v.username),
            s(v.verdict.as_str()),
            opt(v.comment),
            v.feedback.map(|f| s(&Value::Object(f.clone()).to_string())).unwrap_or(wasm_bindgen::JsValue::NULL),
            n(v.at),
        ],
    )
}

impl Store {
    pub async fn votes(&self, id: &ApprovalId) -> Result<Vec<RecordedVote>, ApiError> {
        let sql = format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE approval_id = ?1 ORDER BY at, sub");
        let rows: Vec<DecisionRow> = self.rows(Stmt::new(sql, vec![s(id.as_str())]), "decisions").await?;
        rows::votes(id, rows)
    }

    /// Records one approver's vote (idempotent: an approver votes once).
    pub async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<(), ApiError> {
        self.changes(vote_stmt(id, vote), "record_vote").await.map(drop)
    }

    /// Takes the exclusive right to call Step Functions until `until` and, in the same statement, records
    /// this attempt (verdict, who, when, id = `claim_id`) unless an earlier attempt that may have been
    /// delivered is recorded already: that one is kept, since if it was delivered it is what closed the
    /// task. Exactly one concurrent caller wins; `Some(recorded attempt)` for the winner. Running it again
    /// with the same `claim_id` (a retry whose first answer was lost) wins again.
    pub async fn claim(&self, id: &ApprovalId, c: &ClaimRequest<'_>) -> Result<Option<Attempt>, ApiError> {
        let stmt = Stmt::new(
            "UPDATE approvals SET status = 'claimed', claim_id = ?1, claimed_until = ?2,
               attempt_id = COALESCE(attempt_id, ?1),
               attempt_verdict = CASE WHEN attempt_id IS NULL THEN ?5 ELSE attempt_verdict END,
               attempt_sub = CASE WHEN attempt_id IS NULL THEN ?6 ELSE attempt_sub END,
               attempt_by = CASE WHEN attempt_id IS NULL THEN ?7 ELSE attempt_by END,
               attempt_at = CASE WHEN attempt_id IS NULL THEN ?4 ELSE attempt_at END
             WHERE id = ?3 AND expires_at > ?4 AND task_token IS NOT NULL
               AND (status = 'pending' OR (status = 'claimed' AND (claimed_until <= ?4 OR claim_id = ?1)))
             RETURNING attempt_id, attempt_verdict, attempt_sub",
            vec![s(c.claim_id), n(c.until), s(id.as_str()), n(c.now), s(c.verdict.as_str()), s(c.sub), s(c.by)],
        );
        let rows: Vec<AttemptRow> = self.rows(stmt, "claim").await?;
        rows.into_iter().next().map(Attempt::try_from).transpose().map_err(rows::corrupt(id.as_str()))
    }

    /// The callback was delivered (Step Functions said 200): final, confirmed status, token dropped, the
    /// attempt record cleared, the decision kept for the audit trail.
    pub async fn finish(&self, id: &ApprovalId, claim_id: &str, vote: &Vote<'_>) -> Result<(), ApiError> {
        let status = vote.verdict.final_status();
        let update = Stmt::new(
            format!(
                "UPDATE approvals SET status = ?1, decision = ?1, confirmed = 1, decided_at = ?2, task_token = NULL,
                   claim_id = NULL, claimed_until = NULL, {CLEAR_ATTEMPT} WHERE id = ?3 AND claim_id = ?4"
            ),
            vec![s(status.as_str()), n(vote.at), s(id.as_str()), s(claim_id)],
        );
        self.batch(&[update, vote_stmt(id, vote), close_stmt(id, vote.at)], "finish").await?;
        Ok(())
    }

    /// Step Functions says the task is closed after an attempt that may have been delivered: the recorded
    /// attempt's verdict, unconfirmed (`confirmed = 0`), token dropped. `vote`: this request's decision,
    /// recorded when it is the attempt in question.
    pub async fn unconfirmed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        vote: Option<&Vote<'_>>,
    ) -> Result<(), ApiError> {
        let mut stmts = vec![Stmt::new(
            format!(
                "UPDATE approvals SET status = {ATTEMPT_STATUS}, decision = {ATTEMPT_STATUS}, confirmed = 0,
                   decided_at = ?1, task_token = NULL, claim_id = NULL, claimed_until = NULL
                 WHERE id = ?2 AND claim_id = ?3 AND attempt_verdict IS NOT NULL"
            ),
            vec![n(now), s(id.as_str()), s(claim_id)],
        )];
        stmts.extend(vote.map(|v| vote_stmt(id, v)));
        stmts.push(close_stmt(id, now));
        self.batch(&stmts, "unconfirmed").await?;
        Ok(())
    }

    /// Step Functions says the task is closed and no attempt of ours may have closed it: expired.
    pub async fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> Result<(), ApiError> {
        let update = Stmt::new(
            format!(
                "UPDATE approvals SET status = '{}', task_token = NULL, claim_id = NULL, claimed_until = NULL,
                   decided_at = ?1, {CLEAR_ATTEMPT} WHERE id = ?2 AND claim_id = ?3",
                ApprovalStatus::Expired.as_str()
            ),
            vec![n(now), s(id.as_str()), s(claim_id)],
        );
        self.batch(&[update, close_stmt(id, now)], "expire").await?;
        Ok(())
    }

    /// The callback did not go through (or was never sent): make the approval decidable again. `not_sent`:
    /// no try of this claim can have reached Step Functions, so its attempt record (if it is this claim's)
    /// is cleared; otherwise it stays, and a later "task closed" resolves to its verdict, unconfirmed.
    pub async fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> Result<(), ApiError> {
        let clear = |col: &str| format!("{col} = CASE WHEN ?3 = 1 AND attempt_id = ?2 THEN NULL ELSE {col} END");
        let sql = format!(
            "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL, {}
             WHERE id = ?1 AND claim_id = ?2 AND status = 'claimed'",
            ["attempt_verdict", "attempt_sub", "attempt_by", "attempt_at", "attempt_id"].map(clear).join(", ")
        );
        let stmt = Stmt::new(sql, vec![s(id.as_str()), s(claim_id), n(i64::from(not_sent))]);
        self.changes(stmt, "release").await.map(drop)
    }
}
