//! Delegation, reassignment and out-of-office on the token table.

use ringi_core::adapters::dynamo::{self as item, KEY};
use ringi_core::adapters::guard_ddb::{self as guard};
use ringi_core::base::principal::Principal;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::delegation::{principal_value, OutOfOfficeRequest};
use ringi_core::domain::rules::{Absence, Handover, Reassignment};
use ringi_core::ApiError;
use serde_json::{json, Value};

use super::items::{columns, key, obj, secs_ceil, Item};
use super::DynamoStore;
use crate::store::port::records::OutOfOfficeRow;
use crate::store::port::rows::Loaded;
use crate::store::port::{ApprovalStore, GovernanceStore};

impl DynamoStore {
    /// The out-of-office settings in effect at `now` of the people `listed` names (by sub, or by verified
    /// email), in one BatchGetItem.
    pub(super) async fn absences(&self, listed: &[Principal], now: i64) -> Result<Vec<Absence>, ApiError> {
        let mut keys: Vec<String> =
            listed.iter().filter(|p| !matches!(p, Principal::Group(_))).map(item::absence_key).collect();
        keys.sort();
        keys.dedup();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for i in self.items(&keys).await? {
            let row = Self::absence_row(&i)?;
            let sub = i.get("sub").and_then(Value::as_str);
            let email = i.get("email").and_then(Value::as_str).map(str::to_owned);
            let stand_in = Principal::from_key(&row.delegate);
            if let (Some(sub), Some(stand_in)) = (sub, stand_in) {
                let a = Absence { sub: sub.to_owned(), email, stand_in };
                let updated = i.get("updatedAt").and_then(Value::as_i64).unwrap_or_default();
                if row.starts_at as i64 <= now && now < row.ends_at as i64 && !out.iter().any(|(_, o)| *o == a) {
                    out.push((updated, a));
                }
            }
        }
        // The latest setting first, as `rules::route` reads them (and D1 orders them).
        out.sort_by_key(|(updated, _)| -updated);
        Ok(out.into_iter().map(|(_, a)| a).collect())
    }

    fn absence_row(i: &Item) -> Result<OutOfOfficeRow, ApiError> {
        columns(
            "out_of_office",
            "out_of_office",
            json!({"delegate": i.get("delegate"), "starts_at": i.get("startsAt"), "ends_at": i.get("endsAt"),
                   "note": i.get("note")}),
        )
    }

    /// Deletes the out-of-office copy under `email` if it is still `sub`'s (another account with the same
    /// verified email may have set its own since).
    async fn clear_email_copy(&self, sub: &str, email: &str) -> Result<(), ApiError> {
        let k = item::absence_key(&Principal::Email(email.to_owned()));
        let body = json!({"Key": key(&k), "ConditionExpression": "#s = :sub",
            "ExpressionAttributeNames": {"#s": "sub"}, "ExpressionAttributeValues": {":sub": {"S": sub}}});
        self.conditional("DeleteItem", body).await.map(drop)
    }
}

/// Delegation, reassignment and out-of-office on the token table: each change is one `TransactWriteItems` of
/// the approval item's update (`ringi_core::adapters::guard_ddb`: the rules' guards as its ConditionExpression), the
/// approver-index entries of the seats it adds or removes, and its event. Out-of-office settings are items of
/// their own (`ringi_core::adapters::dynamo::absence_key`).
impl GovernanceStore for DynamoStore {
    async fn delegate(
        &self,
        a: &Loaded,
        h: &Handover,
        actor: &Actor,
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        let id = &a.approval.id;
        let update = guard::handover(h, actor.display().unwrap_or_default(), note);
        let detail = obj(json!({"from": principal_value(&h.from), "to": principal_value(&h.to),
            "slot": principal_value(&h.slot), "depth": h.depth, "note": note}));
        let actions = vec![
            self.tx_guarded(id, &update),
            self.index_put(id, &h.to, secs_ceil(a.approval.expires_at)),
            self.event_put((id, now, EventKind::Delegated), actor, &detail, None),
        ];
        if self.transact_guarded(id, actions).await? {
            return Ok(true);
        }
        // A retry of this very write that went through (its answer lost) leaves the seat handed to `h.to`.
        let Some(now_loaded) = self.load(id).await? else { return Ok(false) };
        Ok(now_loaded.seats.iter().any(|s| s.principal == h.from && s.delegated_to.as_ref() == Some(&h.to)))
    }

    async fn reassign(
        &self,
        a: &Loaded,
        r: &Reassignment,
        listed_after: &[Principal],
        actor: &Actor,
        reason: &str,
        now: i64,
    ) -> Result<bool, ApiError> {
        let id = &a.approval.id;
        let (update, gone) = guard::reassignment(r, &a.seats, listed_after);
        let ttl = secs_ceil(a.approval.expires_at);
        let mut actions = vec![self.tx_guarded(id, &update)];
        actions.extend(r.added.iter().map(|p| self.index_put(id, p, ttl)));
        // A removed seat leaves the approver index: its entry loses the index key (the index is sparse) and
        // stays until the TTL — the worker deletes nothing but out-of-office items (its IAM policy says so).
        actions.extend(gone.iter().map(|p| {
            json!({"Update": {"TableName": self.ddb.table, "Key": key(&item::index_entry_key(id.as_str(), p)),
                "UpdateExpression": "REMOVE #k SET expiresAt = if_not_exists(expiresAt, :ttl)",
                "ExpressionAttributeNames": {"#k": item::INDEX_KEY},
                "ExpressionAttributeValues": {":ttl": {"N": ttl.to_string()}}}})
        }));
        let list = |ps: &[Principal]| ps.iter().map(principal_value).collect::<Vec<_>>();
        let detail = obj(json!({"removed": list(&r.removed), "added": list(&r.added),
            "approvers": list(listed_after), "reason": reason}));
        actions.push(self.event_put((id, now, EventKind::Reassigned), actor, &detail, None));
        self.transact_guarded(id, actions).await
    }

    async fn out_of_office(&self, sub: &str) -> Result<Option<OutOfOfficeRow>, ApiError> {
        let k = item::absence_key(&Principal::Sub(sub.to_owned()));
        self.item(&k).await?.as_ref().map(Self::absence_row).transpose()
    }

    /// The setting under the sub and, with a verified email, its copy under the email, in one transaction;
    /// the copy under an email the person no longer has goes after.
    async fn set_out_of_office(
        &self,
        sub: &str,
        email: Option<&str>,
        o: &OutOfOfficeRequest,
        now: i64,
    ) -> Result<(), ApiError> {
        let own = item::absence_key(&Principal::Sub(sub.to_owned()));
        let before = self.item(&own).await?;
        let email = email.map(str::to_lowercase);
        let mut plain = json!({"sub": sub, "delegate": o.delegate.normalized().key(), "startsAt": o.starts_at,
            "endsAt": o.ends_at, "updatedAt": now,
            // Kept a month past its end (the table's TTL), as the setting shows until it is replaced.
            "expiresAt": secs_ceil(o.ends_at) + 30 * 86_400});
        if let Some(n) = &o.note {
            plain["note"] = Value::from(n.as_str());
        }
        if let Some(e) = &email {
            plain["email"] = Value::from(e.as_str());
        }
        let put = |k: &str| {
            let mut i = plain.clone();
            i[KEY] = Value::from(k);
            json!({"Put": {"TableName": self.ddb.table, "Item": item::to_item(&obj(i))}})
        };
        let mut actions = vec![put(&own)];
        if let Some(e) = &email {
            actions.push(put(&item::absence_key(&Principal::Email(e.clone()))));
        }
        self.ok("TransactWriteItems", json!({"TransactItems": actions})).await?;
        let old = before.as_ref().and_then(|b| b.get("email")).and_then(Value::as_str);
        match old {
            Some(old) if Some(old) != email.as_deref() => self.clear_email_copy(sub, old).await,
            _ => Ok(()),
        }
    }

    async fn clear_out_of_office(&self, sub: &str) -> Result<(), ApiError> {
        let own = item::absence_key(&Principal::Sub(sub.to_owned()));
        let Some(before) = self.item(&own).await? else { return Ok(()) };
        self.ok("DeleteItem", json!({"Key": key(&own)})).await?;
        match before.get("email").and_then(Value::as_str) {
            Some(email) => self.clear_email_copy(sub, email).await,
            None => Ok(()),
        }
    }
}
