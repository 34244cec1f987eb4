//! The outcome on expiry as stored (`ringi_core::domain::on_expiry`): the approvals whose outcome is due, ringi's own
//! claim, and its final writes — the statements of a person's decision (votes.rs) with ringi as the decider,
//! and its event in the same batch.

use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::base::status::Verdict;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::on_expiry::{event_detail, OnExpiry};
use ringi_core::domain::quorum::Quorum;
use ringi_core::domain::vote::Progress;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::Deserialize;

use super::events::event_stmt;
use super::votes::{close_stmt, finish_stmt, system_claim_stmt, unconfirmed_stmt};
use super::{s, D1Store, Stmt};
use crate::store::port::records::DueOutcome;
use crate::store::port::rows::{self, Attempt, AttemptRow};

#[derive(Deserialize)]
struct DueRow {
    id: String,
    task_token: String,
    on_expiry: String,
    expires_at: f64,
    aws_account: Option<String>,
    aws_region: Option<String>,
    quorum: String,
    approver_count: f64,
    request_sha256: Option<String>,
    approvals: f64,
}

impl DueRow {
    fn typed(self) -> Option<DueOutcome> {
        let verdict = OnExpiry::from_stored(&self.on_expiry).ok()?.verdict()?;
        Some(DueOutcome {
            id: ApprovalId::parse(&self.id).ok()?,
            token: TaskToken::parse(&self.task_token).ok()?,
            verdict,
            expires_at: self.expires_at as i64,
            target: AwsTarget::from_stored(self.aws_account.as_deref(), self.aws_region.as_deref()).ok()?,
            quorum: Progress {
                approvals: self.approvals as u32,
                required: Quorum::from_stored(&self.quorum).ok()?.required(self.approver_count as usize),
            },
            request_sha256: self.request_sha256,
        })
    }
}

impl D1Store {
    /// Open approvals with an outcome on expiry past their approvers' deadline and before their task's
    /// (`ringi_core::domain::on_expiry::due`), soonest first: pending ones, and claimed ones whose claim holder died
    /// (lease over). A callback that failed released its claim, so the next run finds the approval again.
    pub async fn on_expiry_due(&self, now: i64) -> Result<Vec<DueOutcome>, ApiError> {
        let stmt = ringi_core::sql::on_expiry::due(now).into();
        let rows: Vec<DueRow> = self.rows(stmt, "on_expiry_due").await?;
        // A row that does not read (corrupt) is skipped, as mail rows are: it does not stop the others.
        Ok(rows.into_iter().filter_map(DueRow::typed).collect())
    }

    /// ringi's claim on `id` (see [`D1Store::claim`]): `Some(recorded attempt)` if it won.
    pub async fn claim_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
    ) -> Result<Option<Attempt>, ApiError> {
        let rows: Vec<AttemptRow> =
            self.rows(system_claim_stmt(id, claim_id, now, until, verdict), "claim_on_expiry").await?;
        rows.into_iter().next().map(Attempt::try_from).transpose().map_err(rows::corrupt(id.as_str()))
    }

    /// Step Functions took ringi's outcome (200): decided on expiry, confirmed, with its event.
    pub async fn finish_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        verdict: Verdict,
        at: i64,
    ) -> Result<(), ApiError> {
        let mark = Stmt::new(
            "UPDATE approvals SET decided_on_expiry = 1 WHERE id = ?1 AND claim_id = ?2",
            vec![s(id.as_str()), s(claim_id)],
        );
        let stmts = [
            mark,
            finish_stmt(id, claim_id, verdict, at),
            close_stmt(id, at),
            event_stmt(id, at, EventKind::Decided, &Actor::System, &event_detail(verdict)),
        ];
        self.batch(&stmts, "finish_on_expiry").await?;
        Ok(())
    }

    /// The task is closed after an attempt that may have been delivered: its verdict, unconfirmed. When that
    /// attempt was ringi's own, the event says so.
    pub async fn unconfirmed_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        attempt: &Attempt,
        now: i64,
    ) -> Result<(), ApiError> {
        let mut stmts = vec![unconfirmed_stmt(id, claim_id, now), close_stmt(id, now)];
        if let (true, Some(verdict)) = (attempt.is_systems(), attempt.verdict) {
            let mut detail = event_detail(verdict);
            detail.insert("unconfirmed".into(), true.into());
            stmts.push(event_stmt(id, now, EventKind::Decided, &Actor::System, &detail));
        }
        self.batch(&stmts, "unconfirmed_on_expiry").await?;
        Ok(())
    }
}
