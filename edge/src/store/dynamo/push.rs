//! Web Push on the token table (`ringi_core::adapters::dynamo::push_*`): one item per device (its subscription and
//! whose it is), one `push#to#<principal>` item per principal a device is reached by (a string set of devices: a
//! person's sub, verified email and groups), and one outbox item per message not delivered yet (found by the
//! cron's Scan, like the mail retries; its TTL drops what was given up on).

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::adapters::dynamo::{push_device_key, push_outbox_key, push_to_key, PUSH_OUTBOX};
use ringi_core::adapters::webpush::{endpoint_hash, PushOutcome, PushTargets, Subscription, MAX_DEVICES};
use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Value};

use super::items::{key, Item};
use super::DynamoStore;
use crate::store::port::push::{PushDevice, PushOwner, PushRetry, PushTried};
use crate::store::port::PushStore;

/// How long an outbox item outlives its last try (the table's TTL drops what was given up on).
const OUTBOX_TTL_SECS: i64 = 7 * 86_400;

fn s(v: &str) -> Value {
    json!({ "S": v })
}

/// The principals a device is reached by: its person's sub, verified email, groups.
fn reached_by(sub: &str, email: Option<&str>, groups: &[String]) -> Vec<Principal> {
    let mut ps = vec![Principal::Sub(sub.to_owned())];
    ps.extend(email.map(|e| Principal::Email(e.to_ascii_lowercase())));
    ps.extend(groups.iter().map(|g| Principal::Group(g.clone())));
    ps
}

fn owner_of(i: &Item) -> (String, Option<String>, Vec<String>) {
    let text = |k: &str| i.get(k).and_then(Value::as_str).map(str::to_owned);
    let groups = text("groupsJson").and_then(|g| serde_json::from_str(&g).ok()).unwrap_or_default();
    (text("sub").unwrap_or_default(), text("email"), groups)
}

fn device_of(i: &Item) -> Option<PushDevice> {
    let text = |k: &str| i.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(PushDevice {
        device: text("device")?,
        endpoint: text("endpoint")?,
        p256dh: text("p256dh")?,
        auth: text("auth")?,
    })
}

impl DynamoStore {
    fn table(&self) -> &str {
        self.ddb.table.as_str()
    }

    /// The `push#to#…` update adding (`ADD`) or removing (`DELETE`) a device.
    fn push_to_update(&self, p: &Principal, device: &str, op: &str) -> Value {
        self.tx_update(json!({"Key": key(&push_to_key(p)), "UpdateExpression": format!("{op} devices :d"),
            "ExpressionAttributeValues": {":d": {"SS": [device]}}}))
    }

    async fn raw_items(&self, keys: &[String]) -> Result<Vec<Item>, ApiError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.items(keys).await
    }

    /// The device items (as a delivery reads them) of `devices`.
    async fn devices(&self, devices: &[String]) -> Result<Vec<PushDevice>, ApiError> {
        let keys: Vec<String> = devices.iter().map(|d| push_device_key(d)).collect();
        Ok(self.raw_items(&keys).await?.iter().filter_map(device_of).collect())
    }
}

impl PushStore for DynamoStore {
    /// The device's item and its `push#to#…` entries in one transaction, the person's sub entry conditional on
    /// fewer than MAX_DEVICES others; entries of an earlier owner of the same endpoint go after.
    async fn subscribe(&self, who: &PushOwner<'_>, sub: &Subscription, lang: &str, now: i64) -> Result<(), ApiError> {
        let device = endpoint_hash(&sub.endpoint);
        let before = self.item(&push_device_key(&device)).await?;
        let email = who.email.map(str::to_ascii_lowercase);
        let groups = serde_json::to_string(who.groups).map_err(|_| ApiError::Internal)?;
        let mut item = json!({"approvalId": s(&push_device_key(&device)), "device": s(&device),
            "endpoint": s(&sub.endpoint), "sub": s(who.sub), "groupsJson": s(&groups), "lang": s(lang),
            "p256dh": s(&URL_SAFE_NO_PAD.encode(&sub.p256dh)), "auth": s(&URL_SAFE_NO_PAD.encode(&sub.auth)),
            "updatedAt": {"N": now.to_string()}});
        if let Some(e) = &email {
            item["email"] = s(e);
        }
        let own = self.tx_update(json!({"Key": key(&push_to_key(&Principal::Sub(who.sub.to_owned()))),
            "UpdateExpression": "ADD devices :d",
            "ConditionExpression": "attribute_not_exists(devices) OR contains(devices, :one) OR size(devices) < :max",
            "ExpressionAttributeValues": {":d": {"SS": [&device]}, ":one": s(&device),
                                          ":max": {"N": MAX_DEVICES.to_string()}}}));
        let mut actions = vec![own, json!({"Put": {"TableName": self.table(), "Item": item}})];
        let now_reached = reached_by(who.sub, email.as_deref(), who.groups);
        actions.extend(now_reached.iter().skip(1).map(|p| self.push_to_update(p, &device, "ADD")));
        if !self.transact(actions).await? {
            return Err(ApiError::TooManyDevices(MAX_DEVICES));
        }
        if let Some(old) = before {
            let (sub, email, groups) = owner_of(&old);
            let gone: Vec<Value> = reached_by(&sub, email.as_deref(), &groups)
                .iter()
                .filter(|p| !now_reached.contains(p))
                .map(|p| self.push_to_update(p, &device, "DELETE"))
                .collect();
            if !gone.is_empty() {
                self.transact(gone).await?;
            }
        }
        Ok(())
    }

    async fn unsubscribe(&self, sub: &str, endpoint: &str) -> Result<bool, ApiError> {
        let device = endpoint_hash(endpoint);
        let Some(old) = self.item(&push_device_key(&device)).await? else { return Ok(false) };
        let (owner, email, groups) = owner_of(&old);
        if owner != sub {
            return Ok(false);
        }
        let mut actions = vec![json!({"Delete": {"TableName": self.table(), "Key": key(&push_device_key(&device)),
            "ConditionExpression": "#s = :sub", "ExpressionAttributeNames": {"#s": "sub"},
            "ExpressionAttributeValues": {":sub": s(sub)}}})];
        actions.extend(
            reached_by(&owner, email.as_deref(), &groups).iter().map(|p| self.push_to_update(p, &device, "DELETE")),
        );
        self.transact(actions).await
    }

    /// The `push#to#…` items of the targets (one BatchGetItem), their devices' items (another), and an outbox
    /// item per device (one transaction).
    async fn push_due(
        &self,
        id: &ApprovalId,
        kind: &str,
        targets: &PushTargets,
        now: i64,
    ) -> Result<Vec<PushDevice>, ApiError> {
        let principals: Vec<Principal> = targets
            .subs
            .iter()
            .map(|x| Principal::Sub(x.clone()))
            .chain(targets.emails.iter().map(|x| Principal::Email(x.clone())))
            .chain(targets.groups.iter().map(|x| Principal::Group(x.clone())))
            .collect();
        let keys: Vec<String> = principals.iter().map(push_to_key).collect();
        let mut found: Vec<String> = Vec::new();
        for i in self.raw_items(&keys).await? {
            for d in i.get("devices").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                if !found.iter().any(|f| f == d) {
                    found.push(d.to_owned());
                }
            }
        }
        found.sort();
        found.truncate(ringi_core::sql::push::DEVICES_MAX as usize);
        let devices = self.devices(&found).await?;
        let ttl = now.div_euclid(1000) + OUTBOX_TTL_SECS;
        let puts: Vec<Value> = devices
            .iter()
            .map(|d| {
                json!({"Put": {"TableName": self.table(), "Item": {
                    "approvalId": s(&push_outbox_key(id.as_str(), &d.device, kind)), "outOf": s(id.as_str()),
                    "device": s(&d.device), "kind": s(kind), "pushState": s("pending"), "attempts": {"N": "0"},
                    "updatedAt": {"N": now.to_string()}, "expiresAt": {"N": ttl.to_string()}}}})
            })
            .collect();
        for chunk in puts.chunks(100) {
            self.transact(chunk.to_vec()).await?;
        }
        Ok(devices)
    }

    async fn push_done(&self, id: &ApprovalId, kind: &str, tried: &[PushTried], now: i64) -> Result<(), ApiError> {
        for t in tried {
            let out = key(&push_outbox_key(id.as_str(), &t.device, kind));
            let mut actions = match t.outcome {
                PushOutcome::Delivered | PushOutcome::Refused => {
                    vec![json!({"Delete": {"TableName": self.table(), "Key": out}})]
                }
                PushOutcome::Retry => vec![self.tx_update(json!({"Key": out,
                    "UpdateExpression": "SET pushState = :f, updatedAt = :now ADD attempts :one",
                    "ExpressionAttributeValues": {":f": s("failed"), ":now": {"N": now.to_string()}, ":one": {"N": "1"}}}))],
                PushOutcome::Gone => {
                    let mut a = vec![json!({"Delete": {"TableName": self.table(), "Key": out}})];
                    if let Some(old) = self.item(&push_device_key(&t.device)).await? {
                        let (sub, email, groups) = owner_of(&old);
                        a.push(json!({"Delete": {"TableName": self.table(), "Key": key(&push_device_key(&t.device))}}));
                        a.extend(
                            reached_by(&sub, email.as_deref(), &groups)
                                .iter()
                                .map(|p| self.push_to_update(p, &t.device, "DELETE")),
                        );
                    }
                    a
                }
            };
            actions.push(self.event_put((id, now, EventKind::Pushed), &Actor::System, &t.detail(kind), None));
            self.transact(actions).await?;
        }
        Ok(())
    }

    /// A bounded Scan of the outbox (failed, or pending since before the sender's grace), the approvals read
    /// consistently; entries of closed approvals or of devices gone are deleted.
    async fn push_retries(
        &self,
        now: i64,
        max_attempts: i64,
        sender_gone_before: i64,
    ) -> Result<Vec<PushRetry>, ApiError> {
        let filter = "begins_with(approvalId, :p) AND (pushState = :failed OR updatedAt < :gone) AND attempts < :max";
        let vals = json!({":p": PUSH_OUTBOX, ":failed": "failed", ":gone": sender_gone_before, ":max": max_attempts});
        let rows = self.scan(filter, vals, ringi_core::sql::push::RETRY_BATCH as usize, None).await?;
        let text = |i: &Item, k: &str| i.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut ids: Vec<String> = rows.iter().map(|r| text(r, "outOf")).collect();
        ids.sort();
        ids.dedup();
        let approvals = self.raw_items(&ids).await?;
        let mut names: Vec<String> = rows.iter().map(|r| text(r, "device")).collect();
        names.sort();
        names.dedup();
        let devices = self.devices(&names).await?;
        let mut out: Vec<PushRetry> = Vec::new();
        for r in &rows {
            let (of, kind, device) = (text(r, "outOf"), text(r, "kind"), text(r, "device"));
            let open = approvals
                .iter()
                .find(|a| a.get("approvalId").and_then(Value::as_str) == Some(of.as_str()))
                .filter(|a| {
                    matches!(a.get("status").and_then(Value::as_str), Some("pending" | "claimed"))
                        && a.get("expiresAtMs").and_then(Value::as_i64).is_some_and(|e| e > now)
                });
            let d = devices.iter().find(|d| d.device == device);
            let (Some(a), Some(d)) = (open, d) else {
                // Nothing to send any more: the approval closed or the device went.
                let _ = self.conditional("DeleteItem", json!({"Key": key(&text(r, "approvalId"))})).await;
                continue;
            };
            let job = Self::mail_job_of(a)?;
            match out.iter_mut().find(|p| p.job.id.as_str() == of && p.kind == kind) {
                Some(p) => p.devices.push(d.clone()),
                None => out.push(PushRetry { job, kind, devices: vec![d.clone()] }),
            }
        }
        Ok(out)
    }
}
