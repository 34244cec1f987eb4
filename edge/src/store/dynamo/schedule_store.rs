//! Reminders, escalation and the chat notifications' bookkeeping on DynamoDB (`ringi_core::adapters::schedule_ddb`): the
//! schedule lives on the approval's own item, so a take, a done mark and an escalation are each one conditional
//! write of that item (with its event and index entries in the same transaction).

use futures_util::future::{join, join_all};
use ringi_core::adapters::chat::ChannelName;
use ringi_core::adapters::dynamo::{self as item, decision_columns};
use ringi_core::adapters::mail::MailState;
use ringi_core::adapters::schedule_ddb::{self as schedule, Lease};
use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::schedule::{Outcome, ScheduleView};
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Map, Value};

use super::items::{corrupt, key, obj, values, Item};
use super::{DynamoStore, MAIL_RETRY_LIMIT};
use crate::store::port::records::{DueEntry, Retries};
use crate::store::port::rows::MailJob;
use crate::store::port::ScheduleStore;

/// Items one run takes entries of at most (D1's batch).
const SCHEDULE_BATCH: usize = 50;

impl DynamoStore {
    /// The schedule of an approval item as its page shows it.
    pub(super) fn schedule_view(i: &Item, window_ms: i64) -> Result<ScheduleView, ApiError> {
        let id = i.get(item::KEY).and_then(Value::as_str).unwrap_or("");
        let entries: Vec<_> = schedule::stored(i).map_err(corrupt(id))?.into_iter().map(|(e, _)| e).collect();
        let num = |k: &str| i.get(k).and_then(Value::as_i64);
        let expires_at = item::expires_at_ms(i).unwrap_or(0);
        let created_at = num("createdAt").unwrap_or(expires_at - item::SEED_TTL_MS);
        Ok(ringi_core::domain::schedule::view(
            &entries,
            created_at,
            expires_at,
            num(schedule::REMINDED_AT),
            num(schedule::ESCALATED_AT),
            window_ms,
        ))
    }
}

/// The verified emails (lower-cased) of everyone who voted on an item: a reminder skips them.
fn voted(i: &Item) -> Vec<String> {
    decision_columns(i).iter().filter_map(|d| d["email"].as_str().map(str::to_lowercase)).collect()
}

impl ScheduleStore for DynamoStore {
    async fn mail_job(&self, id: &ApprovalId) -> Result<Option<MailJob>, ApiError> {
        self.approval_item(id).await?.as_ref().map(Self::mail_job_of).transpose()
    }

    async fn set_mail_state(
        &self,
        id: &ApprovalId,
        state: MailState,
        mailed: Option<(&Map<String, Value>, i64)>,
    ) -> Result<(), ApiError> {
        let body = json!({"Key": key(id.as_str()), "UpdateExpression": "SET mailState = :s ADD mailAttempts :one",
            "ConditionExpression": "attribute_exists(approvalId)",
            "ExpressionAttributeValues": values(json!({":s": state.as_str(), ":one": 1}))});
        let Some((detail, now)) = mailed else { return self.conditional("UpdateItem", body).await.map(drop) };
        let event = self.event_put((id, now, EventKind::Mailed), &Actor::System, detail, None);
        self.transact(vec![self.tx_update(body), event]).await.map(drop)
    }

    /// D1's rule on the item's `mailState` / `mailAttempts`: found by a bounded Scan (50 a run, as on D1), then
    /// read in one BatchGetItem. With nothing due the step costs its Scan alone (one request per MB of table).
    /// Seed items carry no `mailState` (nothing of ringi's to mail) and never match. The chat notifications by
    /// the same rule on `chatState` / `chatAttempts`, their Scan alongside.
    async fn mail_retries(&self, now: i64, max_attempts: i64, sender_gone_before: i64) -> Result<Retries, ApiError> {
        let due = |state: &'static str, attempts: &'static str| async move {
            let filter = format!(
                "({state} = :failed OR ({state} = :unsent AND createdAt < :gone)) AND {attempts} < :max
                 AND expiresAtMs > :now AND #st IN (:pending, :claimed)"
            );
            let vals = json!({":failed": MailState::Failed.as_str(), ":unsent": MailState::Pending.as_str(),
                ":gone": sender_gone_before, ":max": max_attempts, ":now": now, ":pending": "pending", ":claimed": "claimed"});
            let items = self.scan_approvals(&filter, vals, MAIL_RETRY_LIMIT).await?;
            items.iter().map(Self::mail_job_of).collect::<Result<Vec<_>, _>>()
        };
        let (mail, chat) = join(due("mailState", "mailAttempts"), due("chatState", "chatAttempts")).await;
        Ok(Retries { mail: mail?, chat: chat? })
    }

    /// D1's rule: open, inside the window, not reminded (an approval with its own reminders, or registered inside
    /// the window, counts as reminded from the start). A bounded Scan, then the items read consistently.
    async fn reminders_due(&self, now: i64, window_ms: i64) -> Result<Vec<(MailJob, Vec<String>)>, ApiError> {
        let due = "attribute_not_exists(remindedAt) AND attribute_exists(mailState)
            AND expiresAtMs > :now AND expiresAtMs <= :edge AND #st IN (:pending, :claimed)";
        let vals = json!({":now": now, ":edge": now + window_ms, ":pending": "pending", ":claimed": "claimed"});
        let items = self.scan_approvals(due, vals, MAIL_RETRY_LIMIT).await?;
        items.iter().map(|i| Ok((Self::mail_job_of(i)?, voted(i)))).collect()
    }

    async fn mark_reminded(&self, id: &ApprovalId, now: i64, recipients: usize) -> Result<(), ApiError> {
        let update = self.tx_update(json!({"Key": key(id.as_str()), "UpdateExpression": "SET remindedAt = :now",
            "ConditionExpression": "attribute_exists(approvalId) AND attribute_not_exists(remindedAt)",
            "ExpressionAttributeValues": values(json!({":now": now}))}));
        let event = self.event_put(
            (id, now, EventKind::Reminded),
            &Actor::System,
            &obj(json!({"recipients": recipients})),
            None,
        );
        // Not made: reminded already (a retried write, or another run).
        self.transact(vec![update, event]).await.map(drop)
    }

    /// Items whose `scheduleDueAt` has come (a bounded Scan), each taken by one conditional UpdateItem, side by
    /// side; the taken entries come back with the item as it is after the take.
    async fn schedule_due(&self, now: i64, lease_id: &str, lease_ms: i64) -> Result<Vec<DueEntry>, ApiError> {
        let found = self.scan("scheduleDueAt <= :now", json!({":now": now}), SCHEDULE_BATCH, None).await?;
        let lease = Lease { id: lease_id.to_owned(), until: now + lease_ms };
        let takes = found.iter().map(|i| async {
            let id = i.get(item::KEY).and_then(Value::as_str).unwrap_or("");
            let Some(taken) = schedule::take(i, now, &lease).map_err(corrupt(id))? else { return Ok(Vec::new()) };
            let mut body = taken.update.body(id);
            body["ReturnValues"] = Value::from("ALL_NEW");
            // Not made: another run took it, or the approval changed since the Scan read it (the next run sees it).
            let Some(answer) = self.conditional("UpdateItem", body).await? else { return Ok(Vec::new()) };
            if taken.due.is_empty() {
                return Ok(Vec::new());
            }
            let after =
                answer["Attributes"].as_object().map(|a| super::items::plain(id, a)).transpose()?.unwrap_or_default();
            let job = Self::mail_job_of(&after)?;
            let entries = schedule::stored(&after).map_err(corrupt(id))?;
            let escalation = entries.iter().find_map(|(e, _)| e.escalation());
            let (escalated, voted) = (after.contains_key(schedule::ESCALATED_AT), voted(&after));
            Ok::<_, ApiError>(
                taken
                    .due
                    .into_iter()
                    .map(|(kind, seqs)| DueEntry {
                        job: job.clone(),
                        seqs,
                        kind,
                        escalation: escalation.clone(),
                        escalated,
                        voted: voted.clone(),
                    })
                    .collect(),
            )
        });
        let mut out = Vec::new();
        for r in join_all(takes).await {
            out.extend(r?);
        }
        Ok(out)
    }

    async fn schedule_done(
        &self,
        e: &DueEntry,
        lease_id: &str,
        now: i64,
        outcome: Outcome,
        event: Option<(EventKind, Map<String, Value>)>,
    ) -> Result<(), ApiError> {
        let id = &e.job.id;
        let mark = self.tx_update(schedule::done(&e.seqs, lease_id, now, outcome).body(id.as_str()));
        let mut actions = vec![mark];
        if let Some((kind, detail)) = event {
            actions.push(self.event_put((id, now, kind), &Actor::System, &detail, None));
        }
        // Not made: the lease ran out and another run took the entries (it sends its own mail).
        self.transact(actions).await.map(drop)
    }

    async fn schedule_release(&self, e: &DueEntry, lease_id: &str) -> Result<(), ApiError> {
        let body = schedule::release(&e.seqs, lease_id, crate::platform::now_ms()).body(e.job.id.as_str());
        self.conditional("UpdateItem", body).await.map(drop)
    }

    /// The item as it is now (GetItem), then one transaction: the seats and the listed approvers, an approver-index
    /// entry per principal added, the `escalated` event — all under the escalation's condition.
    async fn escalate(
        &self,
        id: &ApprovalId,
        to: &[Principal],
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        let Some(current) = self.approval_item(id).await? else { return Ok(false) };
        let (update, added) = schedule::escalation(&current, to, now).map_err(corrupt(id.as_str()))?;
        let ttl = current.get("expiresAt").and_then(Value::as_i64).unwrap_or(0);
        let detail = ringi_core::domain::schedule::escalated_detail(to, note);
        let mut actions = vec![self.tx_guarded(id, &update)];
        actions.extend(added.iter().map(|p| self.index_put(id, p, ttl)));
        actions.push(self.event_put((id, now, EventKind::Escalated), &Actor::System, &detail, None));
        self.transact_guarded(id, actions).await
    }

    async fn set_chat_state(
        &self,
        id: &ApprovalId,
        state: MailState,
        still_due: &[ChannelName],
        tried: &[Map<String, Value>],
        now: i64,
    ) -> Result<(), ApiError> {
        let due = serde_json::to_string(still_due).map_err(|_| ApiError::Internal)?;
        let update = self.tx_update(json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET chatState = :s, chatDueJson = :due ADD chatAttempts :one",
            "ConditionExpression": "attribute_exists(approvalId)",
            "ExpressionAttributeValues": values(json!({":s": state.as_str(), ":due": due, ":one": 1}))}));
        let mut actions = vec![update];
        actions.extend(tried.iter().map(|d| self.event_put((id, now, EventKind::Notified), &Actor::System, d, None)));
        self.transact(actions).await.map(drop)
    }
}
