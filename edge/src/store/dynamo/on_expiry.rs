//! The outcome on expiry on the token table.

use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::adapters::dynamo::{self as item, attempt_columns, KEY};
use ringi_core::base::status::Verdict;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::on_expiry::{event_detail, OnExpiry};
use ringi_core::domain::vote::{approvals_so_far, Progress};
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde_json::{json, Map, Value};

use super::items::{attempt_status, columns, corrupt, key, plain, values};
use super::{DynamoStore, ON_EXPIRY_BATCH};
use crate::store::port::records::DueOutcome;
use crate::store::port::rows::{Attempt, AttemptRow};
use crate::store::port::{ApprovalStore, OnExpiryStore};

/// The outcome on expiry on the token table: the due approvals by a bounded Scan (as the cron's other steps),
/// ringi's claim and its final writes as the decision path's, each final write in one transaction with its event.
impl OnExpiryStore for DynamoStore {
    async fn on_expiry_due(&self, now: i64) -> Result<Vec<DueOutcome>, ApiError> {
        let due = "onExpiry IN (:approve, :reject) AND attribute_exists(taskToken) AND expiresAtMs <= :now
            AND taskExpiresAtMs > :now AND (#st = :pending OR (#st = :claimed AND claimedUntil <= :now))";
        let vals = json!({":approve": OnExpiry::Approve.as_str(), ":reject": OnExpiry::Reject.as_str(), ":now": now,
            ":pending": "pending", ":claimed": "claimed"});
        let mut out: Vec<DueOutcome> = self
            .scan_approvals(due, vals, ON_EXPIRY_BATCH)
            .await?
            .iter()
            .filter_map(|i| {
                // A corrupt item is skipped, as on D1: it does not stop the others.
                let verdict = OnExpiry::from_stored(i.get("onExpiry")?.as_str()?).ok()?.verdict()?;
                let loaded = Self::loaded(i).ok()?;
                Some(DueOutcome {
                    id: ApprovalId::parse(i.get(KEY)?.as_str()?).ok()?,
                    token: TaskToken::parse(i.get("taskToken")?.as_str()?).ok()?,
                    verdict,
                    expires_at: item::expires_at_ms(i)?,
                    target: AwsTarget::from_stored(
                        i.get("awsAccount").and_then(Value::as_str),
                        i.get("awsRegion").and_then(Value::as_str),
                    )
                    .ok()?,
                    quorum: Progress {
                        approvals: approvals_so_far(&loaded.votes),
                        required: loaded.approval.required(),
                    },
                    request_sha256: loaded.approval.request_sha256,
                })
            })
            .collect();
        out.sort_by_key(|d| d.expires_at);
        Ok(out)
    }

    /// The person's claim with ringi as the decider: the attempt carries no sub, the approvers' deadline is
    /// past (the task's is not), and the approval still has this outcome.
    async fn claim_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
    ) -> Result<Option<Attempt>, ApiError> {
        let attempt = json!({"id": claim_id, "verdict": verdict.as_str(), "by": "ringi", "at": now});
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :claimed, claimId = :cid, claimedUntil = :until, attempt = if_not_exists(attempt, :attempt)",
            "ConditionExpression": "attribute_exists(taskToken) AND taskExpiresAtMs > :now AND onExpiry = :verdict
               AND (#st = :pending OR (#st = :claimed AND (claimedUntil <= :now OR claimId = :cid)))",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":claimed": "claimed", ":pending": "pending", ":cid": claim_id,
                ":until": until, ":attempt": attempt, ":now": now, ":verdict": verdict.as_str()})),
            "ReturnValues": "ALL_NEW"});
        let Some(answer) = self.conditional("UpdateItem", body).await? else { return Ok(None) };
        let after = plain(id.as_str(), answer["Attributes"].as_object().unwrap_or(&Map::new()))?;
        let row: AttemptRow = columns(id.as_str(), "attempt", attempt_columns(&after))?;
        Attempt::try_from(row).map(Some).map_err(corrupt(id.as_str()))
    }

    async fn finish_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        verdict: Verdict,
        at: i64,
    ) -> Result<(), ApiError> {
        let status = verdict.final_status().as_str();
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :status, decision = :status, confirmed = :one, decidedAt = :at,
               decidedOnExpiry = :yes REMOVE taskToken, claimId, claimedUntil, attempt",
            "ConditionExpression": "claimId = :cid",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":status": status, ":one": 1, ":at": at, ":yes": true,
                ":cid": claim_id}))});
        let event = self.event_put((id, at, EventKind::Decided), &Actor::System, &event_detail(verdict), None);
        self.transact(vec![self.tx_update(body), event]).await.map(drop)
    }

    /// ringi's own attempt: its verdict, unconfirmed, decided on expiry, with the event saying so (as on D1);
    /// a person's attempt on record: the decision path's write.
    async fn unconfirmed_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        attempt: &Attempt,
        now: i64,
    ) -> Result<(), ApiError> {
        let (true, Some(verdict)) = (attempt.is_systems(), attempt.verdict) else {
            return ApprovalStore::unconfirmed(self, id, claim_id, now, None).await;
        };
        let status = attempt_status(Some(verdict.as_str()));
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :status, decision = :status, confirmed = :zero, decidedAt = :now,
               decidedOnExpiry = :yes REMOVE taskToken, claimId, claimedUntil",
            "ConditionExpression": "claimId = :cid AND attribute_exists(attempt)",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":status": status, ":zero": 0, ":now": now, ":yes": true,
                ":cid": claim_id}))});
        let mut detail = event_detail(verdict);
        detail.insert("unconfirmed".into(), true.into());
        let event = self.event_put((id, now, EventKind::Decided), &Actor::System, &detail, None);
        self.transact(vec![self.tx_update(body), event]).await.map(drop)
    }
}
