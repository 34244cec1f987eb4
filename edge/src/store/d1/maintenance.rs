//! Mail bookkeeping and the cron's steps: expiry, stale claims, retention, mail retries, reminders.

use ringi_core::adapters::chat::ChannelName;
use ringi_core::adapters::mail::MailState;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::{ApiError, ApprovalId};

use serde::Deserialize;

use super::events::event_stmt;
use super::events::event_stmt_if;
use super::events::{attempt_decided_stmt, deadline_expired_stmt, purged_stmt};
use super::{arg, changed, n, s, D1Store, Stmt};
use crate::error::OrInternal;
use crate::store::port::records::Retries;
use crate::store::port::rows::{mail_job, mail_jobs, MailJob, MailRow, MAIL_COLUMNS};
use ringi_core::sql::upkeep;
use serde_json::{Map, Value};

#[derive(Deserialize)]
struct VotedRow {
    approval_id: String,
    voted_json: String,
}

/// Mails one cron step sends at most per run.
const MAIL_BATCH: i64 = 50;

impl D1Store {
    pub async fn mail_job(&self, id: &ApprovalId) -> Result<Option<MailJob>, ApiError> {
        let sql = format!("SELECT {MAIL_COLUMNS} FROM approvals WHERE id = ?1");
        let row: Option<MailRow> = self.first(Stmt::new(sql, vec![s(id.as_str())]), "mail_row").await?;
        row.map(mail_job).transpose()
    }

    /// Records a mail outcome. Retried like the rest: a lost answer may count one attempt twice (one
    /// retry fewer, never one mail more).
    /// `mailed`: what SES said to this run's mails (recipients, accepted, failed), recorded with the state.
    pub async fn set_mail_state(
        &self,
        id: &ApprovalId,
        state: MailState,
        mailed: Option<(&Map<String, Value>, i64)>,
    ) -> Result<(), ApiError> {
        let stmt = Stmt::new(
            "UPDATE approvals SET mail_state = ?1, mail_attempts = mail_attempts + 1 WHERE id = ?2",
            vec![s(state.as_str()), s(id.as_str())],
        );
        let Some((detail, now)) = mailed else { return self.changes(stmt, "set_mail_state").await.map(drop) };
        let event = event_stmt(id, now, EventKind::Mailed, &Actor::System, detail);
        self.batch(&[stmt, event], "set_mail_state").await.map(drop).map_err(Into::into)
    }

    /// Open approvals past their expiry close (token dropped): `expired`, or — when a callback attempt
    /// may have been delivered — that attempt's verdict, unconfirmed. Returns how many.
    pub async fn expire_due(&self, now: i64) -> Result<usize, ApiError> {
        let approvals: Stmt = upkeep::expire_due(now).into();
        // Their events first (they select the same approvals while they are still open), in the same batch.
        let due = format!("id IN ({})", upkeep::DUE);
        let args = || upkeep::due_args(now).iter().map(arg).collect();
        let stmts = [deadline_expired_stmt(&due, args()), attempt_decided_stmt("expires_at", &due, args()), approvals];
        let results = self.batch(&stmts, "expire_due").await?;
        let expired = changed(results.get(2));
        let inbox: Stmt = upkeep::close_due_inboxes(now).into();
        self.changes(inbox, "close_due").await?;
        Ok(expired)
    }

    /// Claims whose holder died (lease over) go back to pending (their attempt record stays).
    pub async fn release_stale_claims(&self, now: i64) -> Result<usize, ApiError> {
        let stmt = upkeep::release_stale_claims(now).into();
        self.changes(stmt, "release_stale_claims").await
    }

    /// Deletes closed approvals decided before `before` (their retention is over), with their audit rows.
    /// Registration counters of minutes before `rates_before` go too.
    pub async fn purge(&self, before: i64, rates_before: i64, now: i64) -> Result<usize, ApiError> {
        // Their `purged` events first: the event log outlives the rows.
        let mut stmts = vec![purged_stmt(&format!("id IN ({})", upkeep::purgeable()), vec![n(before)], now)];
        stmts.extend(upkeep::purge(before, rates_before).into_iter().map(Stmt::from));
        let results = self.batch(&stmts, "purge").await?;
        Ok(changed(results.get(1 + upkeep::PURGE_APPROVALS)))
    }

    /// Open approvals whose request mail failed (bounded attempts), or is still `pending` although it was
    /// registered before `sender_gone_before` (the worker that was to send it after its response died); and,
    /// by the same rule, those whose chat notifications are to be retried. One round trip for both.
    pub async fn mail_retries(
        &self,
        now: i64,
        max_attempts: i64,
        sender_gone_before: i64,
    ) -> Result<Retries, ApiError> {
        let due = |state: &str, attempts: &str| {
            Stmt::new(
                format!(
                    "SELECT {MAIL_COLUMNS} FROM approvals
                     WHERE ({state} = ?4 OR ({state} = ?5 AND created_at < ?3))
                       AND {attempts} < ?1 AND status IN ('pending', 'claimed') AND expires_at > ?2 LIMIT {MAIL_BATCH}"
                ),
                vec![
                    n(max_attempts),
                    n(now),
                    n(sender_gone_before),
                    s(MailState::Failed.as_str()),
                    s(MailState::Pending.as_str()),
                ],
            )
        };
        let results = self
            .batch(&[due("mail_state", "mail_attempts"), due("chat_state", "chat_attempts")], "mail_retries")
            .await?;
        let jobs = |i: usize| results[i].results::<MailRow>().internal("D1 mail rows").map(mail_jobs);
        Ok(Retries { mail: jobs(0)?, chat: jobs(1)? })
    }

    /// Records what the channels said to one chat delivery: the channels still due, the state, and one
    /// `notified` event per channel tried (its name, never its URL), in one batch.
    pub async fn set_chat_state(
        &self,
        id: &ApprovalId,
        state: MailState,
        still_due: &[ChannelName],
        tried: &[Map<String, Value>],
        now: i64,
    ) -> Result<(), ApiError> {
        let due = serde_json::to_string(still_due).internal("chat due json")?;
        let mut stmts = vec![Stmt::new(
            "UPDATE approvals SET chat_state = ?1, chat_due_json = ?2, chat_attempts = chat_attempts + 1 WHERE id = ?3",
            vec![s(state.as_str()), s(&due), s(id.as_str())],
        )];
        stmts.extend(tried.iter().map(|d| event_stmt(id, now, EventKind::Notified, &Actor::System, d)));
        self.batch(&stmts, "set_chat_state").await.map(drop).map_err(Into::into)
    }

    /// Open approvals inside the reminder window that were not reminded yet. (Approvals registered inside
    /// the window count as reminded at insert: their request mail is recent enough.)
    /// With each one, the verified emails of those who voted already (a reminder skips them).
    pub async fn reminders_due(&self, now: i64, window_ms: i64) -> Result<Vec<(MailJob, Vec<String>)>, ApiError> {
        let due = format!(
            "SELECT {MAIL_COLUMNS} FROM approvals
             WHERE status IN ('pending', 'claimed') AND reminded_at IS NULL AND expires_at > ?1
               AND expires_at <= ?1 + ?2 LIMIT {MAIL_BATCH}"
        );
        let voted = Stmt::new(
            format!(
                "SELECT approval_id, json_group_array(lower(email)) AS voted_json FROM decisions
                 WHERE email IS NOT NULL AND approval_id IN (SELECT id FROM ({due})) GROUP BY approval_id"
            ),
            vec![n(now), n(window_ms)],
        );
        let results = self.batch(&[Stmt::new(due, vec![n(now), n(window_ms)]), voted], "reminders_due").await?;
        let voted = results[1].results::<VotedRow>().internal("D1 voted rows")?;
        let jobs = mail_jobs(results[0].results::<MailRow>().internal("D1 mail rows")?);
        Ok(jobs
            .into_iter()
            .map(|j| {
                let v = voted.iter().find(|v| v.approval_id == j.id.as_str());
                let emails = v.and_then(|v| serde_json::from_str(&v.voted_json).ok()).unwrap_or_default();
                (j, emails)
            })
            .collect())
    }

    /// Records the default reminder (and its event, once).
    pub async fn mark_reminded(&self, id: &ApprovalId, now: i64, recipients: usize) -> Result<(), ApiError> {
        let stmt = Stmt::new(
            "UPDATE approvals SET reminded_at = ?1 WHERE id = ?2 AND reminded_at IS NULL",
            vec![n(now), s(id.as_str())],
        );
        let mut detail = serde_json::Map::new();
        detail.insert("recipients".into(), recipients.into());
        let event = event_stmt_if(id, now, EventKind::Reminded, &Actor::System, &detail, "changes() > 0");
        self.batch(&[stmt, event], "mark_reminded").await.map(drop).map_err(Into::into)
    }
}
