//! The cron's sweeps on the token table: expiry by a bounded Scan; stale leases and retention are the
//! table's own (a lease is a condition, rows go by TTL).

use ringi_core::adapters::dynamo::{self as item};
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Value};

use super::items::{attempt_actor, attempt_status, key, merge, obj, unconfirmed_detail, values};
use super::{DynamoStore, CRON_SCAN_LIMIT};
use crate::platform::log;
use crate::store::port::UpkeepStore;

impl UpkeepStore for DynamoStore {
    /// Open approvals past their expiry close, as on D1: `expired`, or — an attempt that may have been
    /// delivered on record — its verdict, unconfirmed. Found by a bounded Scan (the cron runs every 5 minutes;
    /// index entries, token and rate items carry no token and are filtered out).
    async fn expire_due(&self, now: i64) -> Result<usize, ApiError> {
        // Past the task's deadline (with an outcome on expiry, ringi answers between the approvers' and the task's).
        let due = "attribute_exists(taskToken)
            AND ((attribute_exists(taskExpiresAtMs) AND taskExpiresAtMs <= :now) OR (attribute_not_exists(taskExpiresAtMs)
              AND (expiresAtMs <= :now OR (attribute_not_exists(expiresAtMs) AND expiresAt <= :now_s))))
            AND (attribute_not_exists(#st) OR #st IN (:pending, :seed_pending) OR (#st = :claimed AND claimedUntil <= :now))";
        let vals = json!({":now": now, ":now_s": now.div_euclid(1000), ":pending": "pending", ":seed_pending": "PENDING", ":claimed": "claimed"});
        let mut closed = 0;
        for raw in self.scan_ids(due, vals.clone(), CRON_SCAN_LIMIT).await? {
            let Ok(id) = ApprovalId::parse(&raw) else { continue };
            let Some(i) = self.approval_item(&id).await? else { continue };
            let attempt = i.get("attempt").and_then(Value::as_object);
            let decided_at = item::expires_at_ms(&i).unwrap_or(now);
            let (at, kind) = (decided_at, if attempt.is_some() { EventKind::Decided } else { EventKind::Expired });
            let event = match attempt {
                None => self.event_put((&id, at, kind), &Actor::System, &obj(json!({"reason": "deadline"})), None),
                Some(a) => self.event_put((&id, at, kind), &attempt_actor(a), &unconfirmed_detail(a), None),
            };
            let (set, extra) = match attempt {
                None => (
                    "SET #st = :expired, confirmed = :one, decidedAt = :at".to_owned(),
                    json!({":expired": "expired", ":one": 1}),
                ),
                Some(a) => (
                    "SET #st = :status, decision = :status, confirmed = :zero, decidedAt = :at, decidedOnExpiry = :sys"
                        .to_owned(),
                    json!({":status": attempt_status(a.get("verdict").and_then(Value::as_str)), ":zero": 0,
                           ":sys": a.get("sub").is_none_or(|s| s.is_null() || s == "")}),
                ),
            };
            let body = json!({"Key": key(id.as_str()),
                "UpdateExpression": format!("{set} REMOVE taskToken, claimId, claimedUntil"),
                "ConditionExpression": due,
                "ExpressionAttributeNames": {"#st": "status"},
                "ExpressionAttributeValues": values(merge(merge(vals.clone(), extra), json!({":at": decided_at})))});
            if self.transact(vec![self.tx_update(body), event]).await? {
                closed += 1;
                log("info", "expired", json!({"approvalId": id.as_str(), "unconfirmed": attempt.is_some()}));
            }
        }
        Ok(closed)
    }

    /// Nothing to do: a lapsed lease is claimable as it is (the claim's condition takes `claimedUntil <= now`),
    /// and readers show a claim as pending.
    async fn release_stale_claims(&self, _now: i64) -> Result<usize, ApiError> {
        Ok(0)
    }

    /// The table's TTL removes an approval's items after its task's deadline (`expiresAt`).
    async fn purge(&self, _before: i64, _rates_before: i64, _now: i64) -> Result<usize, ApiError> {
        Ok(0)
    }

    /// Each event item carries its retention's end as its TTL (`expiresAt`).
    async fn purge_events(&self, _before: i64) -> Result<usize, ApiError> {
        Ok(0)
    }
}
