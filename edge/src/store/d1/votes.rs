//! Votes, the claim, and the writes that close a decision (design.md §6 "Attempts").

use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::vote::RecordedVote;
use ringi_core::sql::guards_sql;
use ringi_core::{ApiError, ApprovalId};
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::approvals::{decisions_stmt, load_stmts, read_loaded};
use super::arg;
use super::events::{attempt_decided_stmt, event_once_stmt, event_stmt, Once};
use super::{changed, n, opt, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::decision::{voter, CallbackFailure, ClaimRequest, Guess, Opened, Vote};
use crate::store::port::rows::{self, Attempt, AttemptRow, DecisionRow};
use ringi_core::domain::audit::{Actor, EventKind};
use serde_json::json;

/// SET clause that forgets the attempt record.
const CLEAR_ATTEMPT: &str =
    "attempt_id = NULL, attempt_verdict = NULL, attempt_sub = NULL, attempt_by = NULL, attempt_at = NULL";
/// SET clause of a write that turns the recorded attempt into the outcome: ringi's own attempt (attempt_sub
/// NULL) was the outcome on expiry.
pub(super) const ON_EXPIRY_ATTEMPT: &str =
    "decided_on_expiry = CASE WHEN attempt_id IS NOT NULL AND attempt_sub IS NULL THEN 1 ELSE 0 END";
/// The stored status of the recorded attempt's verdict.
pub(super) const ATTEMPT_STATUS: &str = "(CASE attempt_verdict WHEN 'reject' THEN 'rejected' ELSE 'approved' END)";

/// The claim (see [`D1Store::claim`]), with `extra` conditions: parameters ?1 claim id, ?2 lease end, ?3 approval
/// id, ?4 now, ?5 verdict, ?6 sub, ?7 attempted by, then `extra_args` from ?8 on (D1 refuses a binding the
/// statement does not use: they come only with the conditions that use them).
fn claim_stmt(id: &ApprovalId, c: &ClaimRequest<'_>, extra: &str, extra_args: Vec<JsValue>) -> Stmt {
    claim_stmt_until(id, c, "expires_at", extra, extra_args)
}

/// [`claim_stmt`] open until the column `deadline`: a person's claim until the approvers' deadline
/// (`expires_at`), ringi's own outcome on expiry until the task's.
fn claim_stmt_until(
    id: &ApprovalId,
    c: &ClaimRequest<'_>,
    deadline: &str,
    extra: &str,
    extra_args: Vec<JsValue>,
) -> Stmt {
    let mut args = vec![s(c.claim_id), n(c.until), s(id.as_str()), n(c.now), s(c.verdict.as_str()), s(c.sub), s(c.by)];
    args.extend(extra_args);
    Stmt::new(
        format!(
            "UPDATE approvals SET status = 'claimed', claim_id = ?1, claimed_until = ?2,
               attempt_id = COALESCE(attempt_id, ?1),
               attempt_verdict = CASE WHEN attempt_id IS NULL THEN ?5 ELSE attempt_verdict END,
               attempt_sub = CASE WHEN attempt_id IS NULL THEN ?6 ELSE attempt_sub END,
               attempt_by = CASE WHEN attempt_id IS NULL THEN ?7 ELSE attempt_by END,
               attempt_at = CASE WHEN attempt_id IS NULL THEN ?4 ELSE attempt_at END
             WHERE id = ?3 AND {deadline} > ?4 AND task_token IS NOT NULL
               AND (status = 'pending' OR (status = 'claimed' AND (claimed_until <= ?4 OR claim_id = ?1))) {extra}
             RETURNING attempt_id, attempt_verdict, attempt_sub"
        ),
        args,
    )
}

/// The caller (principal keys ?8, verified email `email`) is not a requester of the row `approvals`, or
/// requesters may decide: `ringi_core::domain::rules::Guard::NotRequester` in the SQL of the first round trip (a
/// requester neither takes the claim nor votes; a caller without a verified email counts as any requester
/// named by email).
fn not_requester_sql(email: &str) -> String {
    format!(
        "(approvals.allow_self_approval = 1 OR (NOT EXISTS (SELECT 1 FROM json_each(approvals.requested_by_json) r
           WHERE r.value IN (SELECT value FROM json_each(?8)))
         AND ({email} IS NOT NULL OR NOT EXISTS (SELECT 1 FROM json_each(approvals.requested_by_json) r
           WHERE r.value LIKE 'email:%'))))"
    )
}
/// The listed principal a vote through the seat `p` satisfies (a delegate's seat stands in for its slot).
const SLOT_SQL: &str = "COALESCE(p.slot, p.pkey)";

/// The approvals the quorum of the row `approvals` needs (`Quorum::required`).
const REQUIRED_SQL: &str =
    "(CASE approvals.quorum WHEN 'any' THEN 1 WHEN 'all' THEN MAX(approvals.approver_count, 1) ELSE CAST(approvals.quorum AS INTEGER) END)";

impl Guess<'_> {
    /// The caller (keys ?8) holds a slot of approval ?3 (a listed principal's seat, or a delegate's, that was
    /// not handed on: `ringi_core::domain::delegation`), is not one of its requesters, and the approval has no form.
    fn approver_sql(&self) -> String {
        format!(
            "form_json = '[]' AND EXISTS (SELECT 1 FROM approval_principals p
               WHERE p.approval_id = ?3 AND p.delegated_to IS NULL AND p.pkey IN (SELECT value FROM json_each(?8)))
               AND {}",
            not_requester_sql("?9")
        )
    }

    /// The verdict ?5 of caller ?6 (keys ?8, verified email ?9) decides: a rejection, or an approval that
    /// satisfies a listed principal nobody else satisfied, from a person who did not approve under another
    /// account, and completes the quorum. Never when the caller voted the other way.
    fn decides_sql(&self) -> String {
        let others = "FROM decisions d WHERE d.approval_id = ?3 AND d.decision = 'approve' AND d.sub != ?6";
        format!(
            "NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?3 AND d.sub = ?6 AND d.decision != ?5)
             AND (?5 = 'reject' OR (
               EXISTS (SELECT 1 FROM approval_principals p JOIN json_each(?8) k ON k.value = p.pkey
                 WHERE p.approval_id = ?3 AND p.delegated_to IS NULL
                   AND NOT EXISTS (SELECT 1 {others} AND d.principal = {SLOT_SQL}))
               AND NOT EXISTS (SELECT 1 {others} AND ?9 IS NOT NULL AND lower(d.email) = lower(?9))
               AND (SELECT COUNT(DISTINCT d.principal) {others}) + 1 >= {REQUIRED_SQL}))"
        )
    }

    /// The caller's approval that does not complete the quorum, as `ringi_core::domain::quorum::next_step` places it: on
    /// the first of the caller's keys (their order: sub, email, groups) that is listed and not satisfied yet,
    /// unless the caller voted already or their verified email approved under another account.
    fn vote_stmt(&self, id: &ApprovalId) -> Stmt {
        let c = self.claim;
        Stmt::new(
            format!(
                "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
                   feedback_json, at)
                 SELECT ?1, ?2, {SLOT_SQL}, ?3, ?4, 'approve', ?5, NULL, ?6
                 FROM approval_principals p JOIN json_each(?8) k ON k.value = p.pkey
                   JOIN approvals ON approvals.id = p.approval_id
                 WHERE p.approval_id = ?1 AND p.delegated_to IS NULL AND ?9 = 'approve' AND approvals.form_json = '[]'
                   AND approvals.expires_at > ?7 AND approvals.task_token IS NOT NULL
                   AND (approvals.status = 'pending' OR (approvals.status = 'claimed' AND approvals.claimed_until <= ?7))
                   AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?1 AND d.sub = ?2)
                   AND {not_requester}
                   AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.approval_id = ?1 AND d.decision = 'approve'
                     AND (d.principal = {SLOT_SQL} OR (?3 IS NOT NULL AND lower(d.email) = lower(?3))))
                   AND (SELECT COUNT(DISTINCT d.principal) FROM decisions d
                     WHERE d.approval_id = ?1 AND d.decision = 'approve') + 1 < {REQUIRED_SQL}
                 ORDER BY k.key LIMIT 1",
                not_requester = not_requester_sql("?3")
            ),
            vec![
                s(id.as_str()),
                s(c.sub),
                opt(self.email),
                opt(self.username),
                opt(self.comment),
                n(self.at),
                n(c.now),
                s(&c.keys),
                s(c.verdict.as_str()),
            ],
        )
    }
}

/// The claim of ringi itself (the outcome on expiry, `onExpiry` = `verdict`): the same conditional claim a
/// person's decision takes, recording an attempt whose `attempt_sub` is NULL (ringi's, see
/// `Attempt::is_systems`).
pub(super) fn system_claim_stmt(id: &ApprovalId, claim_id: &str, now: i64, until: i64, verdict: Verdict) -> Stmt {
    let c =
        ClaimRequest { claim_id, now, until, verdict, sub: "", by: "ringi", keys: String::new(), guards: Vec::new() };
    let mut stmt = claim_stmt_until(id, &c, "task_expires_at", "AND on_expiry = ?8", vec![s(verdict.as_str())]);
    stmt.args[5] = JsValue::NULL; // ?6, the attempt's sub
    stmt
}

/// The final write once Step Functions took verdict `verdict` under claim `claim_id` (200).
pub(super) fn finish_stmt(id: &ApprovalId, claim_id: &str, verdict: Verdict, at: i64) -> Stmt {
    Stmt::new(
        format!(
            "UPDATE approvals SET status = ?1, decision = ?1, confirmed = 1, decided_at = ?2, task_token = NULL,
               claim_id = NULL, claimed_until = NULL, {CLEAR_ATTEMPT} WHERE id = ?3 AND claim_id = ?4"
        ),
        vec![s(verdict.final_status().as_str()), n(at), s(id.as_str()), s(claim_id)],
    )
}

/// The recorded attempt's verdict, unconfirmed (see [`D1Store::unconfirmed`]); ringi's own attempt marks the
/// approval decided on expiry.
pub(super) fn unconfirmed_stmt(id: &ApprovalId, claim_id: &str, now: i64) -> Stmt {
    Stmt::new(
        format!(
            "UPDATE approvals SET status = {ATTEMPT_STATUS}, decision = {ATTEMPT_STATUS}, confirmed = 0,
               decided_at = ?1, task_token = NULL, claim_id = NULL, claimed_until = NULL, {ON_EXPIRY_ATTEMPT}
             WHERE id = ?2 AND claim_id = ?3 AND attempt_verdict IS NOT NULL"
        ),
        vec![n(now), s(id.as_str()), s(claim_id)],
    )
}

/// Moves the approval from its approvers' pending inboxes to their decided ones.
pub(super) fn close_stmt(id: &ApprovalId, at: i64) -> Stmt {
    Stmt::new(
        "UPDATE approval_principals SET open = 0, sort_at = ?1 WHERE approval_id = ?2",
        vec![n(at), s(id.as_str())],
    )
}

/// The vote as delivered: recorded whatever happened to its seat since (the decision went out under it).
fn vote_stmt(id: &ApprovalId, v: &Vote<'_>) -> Stmt {
    vote_stmt_where(id, v, "")
}

/// A vote that does not decide: recorded only while a seat still holds the slot it goes through (a
/// reassignment may have removed it since the load; the vote then lands nowhere and the caller decides again).
fn held_vote_stmt(id: &ApprovalId, v: &Vote<'_>) -> Stmt {
    vote_stmt_where(
        id,
        v,
        "WHERE EXISTS (SELECT 1 FROM approval_principals p WHERE p.approval_id = ?1
           AND COALESCE(p.slot, p.pkey) = ?3 AND p.delegated_to IS NULL)",
    )
}

fn vote_stmt_where(id: &ApprovalId, v: &Vote<'_>, condition: &str) -> Stmt {
    Stmt::new(
        format!(
            "INSERT OR IGNORE INTO decisions (approval_id, sub, principal, email, username, decision, comment,
               feedback_json, at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 {condition}"
        ),
        vec![
            s(id.as_str()),
            s(v.sub),
            s(&v.principal.key()),
            opt(v.email),
            opt(v.username),
            s(v.verdict.as_str()),
            opt(v.comment),
            v.feedback.map(|f| s(&Value::Object(f.clone()).to_string())).unwrap_or(JsValue::NULL),
            n(v.at),
        ],
    )
}

impl D1Store {
    pub async fn votes(&self, id: &ApprovalId) -> Result<Vec<RecordedVote>, ApiError> {
        let rows: Vec<DecisionRow> = self.rows(decisions_stmt(id), "decisions").await?;
        rows::votes(id, rows)
    }

    /// The first round trip of a decision: the approval as it was (to check the request against), and — with
    /// `guess` — what the decision most likely comes to, done in the same transaction: the claim if the
    /// caller's verdict decides, else the caller's approval recorded, then the votes re-read. Both writes are
    /// conditional in SQL on the caller being a listed approver (a non-approver never takes the claim nor
    /// votes) and on everything the request is later checked against; the caller checks again in Rust and
    /// undoes a claim the checks refuse. One D1 round trip either way.
    pub async fn open_decision(&self, id: &ApprovalId, guess: Option<&Guess<'_>>) -> Result<Opened, ApiError> {
        let Some(g) = guess else {
            return Ok(Opened { loaded: self.load(id).await?, claimed: None, voted: false, votes_after: None });
        };
        let mut stmts = load_stmts(id);
        let cond = format!("AND {} AND {}", g.approver_sql(), g.decides_sql());
        stmts.push(claim_stmt(id, g.claim, &cond, vec![s(&g.claim.keys), opt(g.email)]));
        stmts.push(g.vote_stmt(id));
        stmts.push(decisions_stmt(id));
        stmts.push(voted_event(id, g.claim.sub, &voter(g.claim.sub, g.email, g.username), Verdict::Approve, g.at));
        let results = self.batch(&stmts, "open_decision").await?;
        let loaded = read_loaded(id, &results)?;
        let claimed = results[3].results::<AttemptRow>().internal("D1 claim row")?;
        let claimed =
            claimed.into_iter().next().map(Attempt::try_from).transpose().map_err(rows::corrupt(id.as_str()))?;
        let after = results[5].results::<DecisionRow>().internal("D1 decision rows")?;
        Ok(Opened { loaded, claimed, voted: changed(results.get(4)) == 1, votes_after: Some(rows::votes(id, after)?) })
    }

    /// Records one approver's vote (idempotent: an approver votes once).
    pub async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<(), ApiError> {
        let event = voted_event(id, vote.sub, &vote.actor(), vote.verdict, vote.at);
        self.batch(&[held_vote_stmt(id, vote), event], "record_vote").await.map(drop).map_err(Into::into)
    }

    /// Takes the exclusive right to call Step Functions until `until` and, in the same statement, records
    /// this attempt (verdict, who, when, id = `claim_id`) unless an earlier attempt that may have been
    /// delivered is recorded already: that one is kept, since if it was delivered it is what closed the
    /// task. Exactly one concurrent caller wins; `Some(recorded attempt)` for the winner. Running it again
    /// with the same `claim_id` (a retry whose first answer was lost) wins again.
    pub async fn claim(&self, id: &ApprovalId, c: &ClaimRequest<'_>) -> Result<Option<Attempt>, ApiError> {
        // An approval that completes the quorum commits under its guards, as on every backend.
        let guard = guards_sql(id.as_str(), &c.guards, 8);
        let stmt = match c.guards.is_empty() {
            true => claim_stmt(id, c, "", Vec::new()),
            false => claim_stmt(id, c, &format!("AND {}", guard.sql), guard.args.iter().map(arg).collect()),
        };
        let rows: Vec<AttemptRow> = self.rows(stmt, "claim").await?;
        rows.into_iter().next().map(Attempt::try_from).transpose().map_err(rows::corrupt(id.as_str()))
    }

    /// The callback was delivered (Step Functions said 200): final, confirmed status, token dropped, the
    /// attempt record cleared, the decision kept for the audit trail.
    pub async fn finish(&self, id: &ApprovalId, claim_id: &str, vote: &Vote<'_>) -> Result<(), ApiError> {
        let status = vote.verdict.final_status();
        let update = finish_stmt(id, claim_id, vote.verdict, vote.at);
        let detail = json!({"verdict": vote.verdict.as_str(), "status": status.as_str(), "confirmed": true});
        let event = event_once_stmt(
            id,
            vote.at,
            EventKind::Decided,
            &vote.actor(),
            detail.as_object().expect("an object"),
            Once {
                key: "decided",
                when: "EXISTS (SELECT 1 FROM approvals WHERE id = ?1 AND status = ?8 AND confirmed = 1)",
                args: vec![s(status.as_str())],
            },
        );
        self.batch(&[update, vote_stmt(id, vote), close_stmt(id, vote.at), event], "finish").await?;
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
        let mut stmts = vec![unconfirmed_stmt(id, claim_id, now)];
        stmts.extend(vote.map(|v| vote_stmt(id, v)));
        stmts.push(close_stmt(id, now));
        stmts.push(attempt_decided_stmt(
            "?2",
            "id = ?1 AND claim_id IS NULL AND confirmed = 0",
            vec![s(id.as_str()), n(now)],
        ));
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
        let event = event_once_stmt(
            id,
            now,
            EventKind::Expired,
            &Actor::System,
            json!({"reason": "task_closed"}).as_object().expect("an object"),
            Once {
                key: "expired",
                when: "EXISTS (SELECT 1 FROM approvals WHERE id = ?1 AND status = ?8)",
                args: vec![s(ApprovalStatus::Expired.as_str())],
            },
        );
        self.batch(&[update, close_stmt(id, now), event], "expire").await?;
        Ok(())
    }

    /// The callback did not go through (or was never sent): make the approval decidable again. `not_sent`:
    /// no try of this claim can have reached Step Functions, so its attempt record (if it is this claim's)
    /// is cleared; otherwise it stays, and a later "task closed" resolves to its verdict, unconfirmed.
    pub async fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> Result<(), ApiError> {
        self.changes(release_stmt(id, claim_id, not_sent), "release").await.map(drop)
    }

    /// [`D1Store::release`] after a callback that failed, with its `callback_failed` event (the error class,
    /// never the token) in the same round trip.
    pub async fn release_failed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        not_sent: bool,
        failure: &CallbackFailure,
    ) -> Result<(), ApiError> {
        let detail = json!({"verdict": failure.verdict.as_str(), "error": failure.class, "code": failure.code,
                            "maybeDelivered": !not_sent});
        let event = event_stmt(
            id,
            failure.at,
            EventKind::CallbackFailed,
            &failure.actor,
            detail.as_object().expect("an object"),
        );
        self.batch(&[release_stmt(id, claim_id, not_sent), event], "release").await.map(drop).map_err(Into::into)
    }
}

/// The statement of [`D1Store::release`].
fn release_stmt(id: &ApprovalId, claim_id: &str, not_sent: bool) -> Stmt {
    let clear = |col: &str| format!("{col} = CASE WHEN ?3 = 1 AND attempt_id = ?2 THEN NULL ELSE {col} END");
    let sql = format!(
        "UPDATE approvals SET status = 'pending', claim_id = NULL, claimed_until = NULL, {}
         WHERE id = ?1 AND claim_id = ?2 AND status = 'claimed'",
        ["attempt_verdict", "attempt_sub", "attempt_by", "attempt_at", "attempt_id"].map(clear).join(", ")
    );
    Stmt::new(sql, vec![s(id.as_str()), s(claim_id), n(i64::from(not_sent))])
}

/// The `voted` event of `sub`'s approval, once per voter, if this very request's vote is on record (its
/// `at`: an earlier vote, or the decider's row, is not this vote).
fn voted_event(id: &ApprovalId, sub: &str, actor: &Actor, verdict: Verdict, at: i64) -> Stmt {
    event_once_stmt(
        id,
        at,
        EventKind::Voted,
        actor,
        json!({"verdict": verdict.as_str()}).as_object().expect("an object"),
        Once {
            key: &format!("voted:{sub}"),
            when: "EXISTS (SELECT 1 FROM decisions WHERE approval_id = ?1 AND sub = ?8 AND decision = ?9 AND at = ?2)",
            args: vec![s(sub), s(verdict.as_str())],
        },
    )
}
