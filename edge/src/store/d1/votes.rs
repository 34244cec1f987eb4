//! Votes, the claim, and the writes that close a decision (design.md §6 "Attempts").

use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::vote::RecordedVote;
use ringi_core::sql::decision::{self, Claim, Deadline};
use ringi_core::sql::votes::{self, GuessedVote, Seat, VoteRow};
use ringi_core::sql::{guards_sql, SqlArg};
use ringi_core::{ApiError, ApprovalId};
use serde_json::Value;

use super::approvals::{decisions_stmt, load_stmts, read_loaded};
use super::events::{attempt_decided_stmt, event_once_stmt, event_stmt, Once};
use super::{changed, n, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::decision::{voter, CallbackFailure, ClaimRequest, Guess, Opened, Vote};
use crate::store::port::rows::{self, Attempt, AttemptRow, DecisionRow};
use ringi_core::domain::audit::{Actor, EventKind};
use serde_json::json;

/// The claim (`ringi_core::sql::decision::claim`) of a person's decision, with `extra` conditions whose values
/// follow from ?8 on.
fn claim_stmt(id: &ApprovalId, c: &ClaimRequest<'_>, extra: &str, extra_args: Vec<SqlArg>) -> Stmt {
    let claim =
        Claim { claim_id: c.claim_id, now: c.now, until: c.until, verdict: c.verdict, sub: Some(c.sub), by: c.by };
    decision::claim(id.as_str(), &claim, Deadline::Approvers, extra, extra_args).into()
}

/// The claim of ringi itself (the outcome on expiry): an attempt without a sub (`Attempt::is_systems`).
pub(super) fn system_claim_stmt(id: &ApprovalId, claim_id: &str, now: i64, until: i64, verdict: Verdict) -> Stmt {
    decision::system_claim(id.as_str(), claim_id, now, until, verdict).into()
}

pub(super) fn finish_stmt(id: &ApprovalId, claim_id: &str, verdict: Verdict, at: i64) -> Stmt {
    decision::finish(id.as_str(), claim_id, verdict, at).into()
}

pub(super) fn unconfirmed_stmt(id: &ApprovalId, claim_id: &str, now: i64) -> Stmt {
    decision::unconfirmed(id.as_str(), claim_id, now).into()
}

pub(super) fn close_stmt(id: &ApprovalId, at: i64) -> Stmt {
    decision::close_inbox(id.as_str(), at).into()
}

fn release_stmt(id: &ApprovalId, claim_id: &str, not_sent: bool) -> Stmt {
    decision::release(id.as_str(), claim_id, not_sent).into()
}

/// A vote's insert (`ringi_core::sql::votes::vote`) under the seat rule `seat`.
fn vote_stmt_at(id: &ApprovalId, v: &Vote<'_>, seat: Seat) -> Stmt {
    let principal = v.principal.key();
    let feedback = v.feedback.map(|f| Value::Object(f.clone()).to_string());
    let row = VoteRow {
        sub: v.sub,
        principal: &principal,
        email: v.email,
        username: v.username,
        verdict: v.verdict,
        comment: v.comment,
        feedback_json: feedback.as_deref(),
        at: v.at,
    };
    votes::vote(id.as_str(), &row, seat).into()
}

/// The vote as delivered: recorded whatever happened to its seat since (the decision went out under it).
fn vote_stmt(id: &ApprovalId, v: &Vote<'_>) -> Stmt {
    vote_stmt_at(id, v, Seat::Any)
}

/// A vote that does not decide: recorded only while a seat still holds its slot.
fn held_vote_stmt(id: &ApprovalId, v: &Vote<'_>) -> Stmt {
    vote_stmt_at(id, v, Seat::Held)
}

/// The guessed approval that does not complete the quorum (`ringi_core::sql::votes::guessed_vote`).
fn guessed_vote_stmt(id: &ApprovalId, g: &Guess<'_>) -> Stmt {
    let c = g.claim;
    let vote = GuessedVote {
        sub: c.sub,
        email: g.email,
        username: g.username,
        comment: g.comment,
        at: g.at,
        now: c.now,
        keys_json: &c.keys,
        verdict: c.verdict,
    };
    votes::guessed_vote(id.as_str(), &vote).into()
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
        let cond = votes::guessed_claim_condition(&g.claim.keys, g.email);
        stmts.push(claim_stmt(id, g.claim, &cond.sql, cond.args));
        stmts.push(guessed_vote_stmt(id, g));
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
            false => claim_stmt(id, c, &format!("AND {}", guard.sql), guard.args),
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
        let update: Stmt = decision::expire(id.as_str(), claim_id, now).into();
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
