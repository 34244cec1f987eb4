//! The approval page and the event log's export on the token table (events are items of their own, read
//! through two indexes).

use futures_util::future::{join, join3};
use ringi_core::adapters::dynamo::{self as item};
use ringi_core::api::audit_export::AuditQuery;
use ringi_core::domain::audit::{Actor, Event, EventKind};
use ringi_core::domain::audit_chain::seal;
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Map, Value};

use super::items::{columns, event_row, event_rows, plain, secs_ceil};
use super::DynamoStore;
use crate::platform::now_ms;
use crate::store::port::records::{events, page_events, EventPage, EventRow, Viewed, TIMELINE_MAX};
use crate::store::port::AuditStore;

impl DynamoStore {
    /// Seals the unsealed events of `approvals` into their hash chains (`ringi_core::domain::audit_chain`): per
    /// approval, the chain's head (GetItem, consistent) and its unsealed events (the approval's index, in
    /// `(at, seq)` order), then one transaction that moves the head on only if it is still where it was read and
    /// seals each event only if it is still unsealed. A transaction that lost a race to another seal is read
    /// and made again. An event the index does not show yet is sealed by the approval's next seal. With `sweep`
    /// (the cron), also the approvals with events a request left unsealed (it died, or its seal failed): a bounded
    /// Scan for the sparse `chainPending` mark, as the cron's other look-ups. How many events this call sealed.
    pub async fn seal_events(&self, approvals: &[String], sweep: bool) -> Result<usize, ApiError> {
        let mut ids = approvals.to_vec();
        if sweep {
            let pending = format!("{} = :one", item::CHAIN_PENDING);
            let limit = ringi_core::sql::chain::SEAL_BATCH as usize;
            for found in self.scan(&pending, json!({":one": 1}), limit, Some(item::EVENT_OF)).await? {
                match found.get(item::EVENT_OF).and_then(Value::as_str) {
                    Some(id) if !ids.iter().any(|i| i == id) => ids.push(id.to_owned()),
                    _ => {}
                }
            }
        }
        let mut sealed = 0;
        for id in &ids {
            for _ in 0..4 {
                let (head, pending) = join(self.item(&item::chain_key(id)), self.unsealed(id)).await;
                let (head, mut pending) = (head?.as_ref().and_then(item::chain_head), pending?);
                if pending.is_empty() {
                    break;
                }
                // One transaction holds 100 writes: the head and 99 events.
                pending.truncate(99);
                let events: Vec<Event> = pending.iter().map(|(_, e)| e.clone()).collect();
                let links = seal(id, head.as_ref(), &events);
                let keyed: Vec<(String, _)> = pending.into_iter().map(|(k, _)| k).zip(links).collect();
                let expires = secs_ceil(now_ms() + self.cfg.audit_retention_ms);
                let updates = item::seal_updates(id, head.as_ref(), &keyed, expires);
                if self.transact(updates.into_iter().map(|u| self.tx_update(u)).collect()).await? {
                    sealed += keyed.len();
                }
            }
        }
        Ok(sealed)
    }

    /// The approval's unsealed events (item key, event), oldest first.
    async fn unsealed(&self, id: &str) -> Result<Vec<(String, Event)>, ApiError> {
        let mut out = Vec::new();
        let mut next: Option<Value> = None;
        loop {
            let mut body = json!({"IndexName": item::EVENTS_BY_APPROVAL, "KeyConditionExpression": "#o = :id",
                "FilterExpression": "attribute_exists(#p)",
                "ExpressionAttributeNames": {"#o": item::EVENT_OF, "#p": item::CHAIN_PENDING},
                "ExpressionAttributeValues": {":id": {"S": id}}});
            if let Some(k) = next.take() {
                body["ExclusiveStartKey"] = k;
            }
            let answer = self.ok("Query", body).await?;
            for i in answer["Items"].as_array().into_iter().flatten().filter_map(Value::as_object) {
                let plain = plain("event", i)?;
                let k = plain.get(item::KEY).and_then(Value::as_str).unwrap_or_default().to_owned();
                let row: EventRow = columns(id, "event", event_row(&plain)?)?;
                out.push((k, events(vec![row])?.remove(0)));
            }
            match answer.get("LastEvaluatedKey") {
                Some(k) if !k.is_null() => next = Some(k.clone()),
                _ => break,
            }
        }
        Ok(out)
    }
}

impl AuditStore for DynamoStore {
    /// The approval, its timeline and the caller's first-view event at once (GetItem, the timeline's Query
    /// and a TransactWriteItems of a ConditionCheck — the caller is listed — with the event's Put once per
    /// approver): three requests side by side, one round trip's time. The index behind the timeline is
    /// read as it is (eventually consistent): the view's own event, when this request wrote it, is added.
    /// The schedule is the item's own.
    async fn view(
        &self,
        id: &ApprovalId,
        actor: &Actor,
        keys: &str,
        now: i64,
        window_ms: i64,
    ) -> Result<Viewed, ApiError> {
        let Actor::User { sub, .. } = actor else { return Err(ApiError::Internal) };
        let keys: Vec<String> = serde_json::from_str(keys).map_err(|_| ApiError::Internal)?;
        let event = self.event_put((id, now, EventKind::Viewed), actor, &Map::new(), Some(&format!("viewed:{sub}")));
        let first_view = async {
            if keys.is_empty() {
                return Ok(false);
            }
            self.transact(vec![self.listed_check(id, &keys), event.clone()]).await
        };
        let (found, timeline, recorded) = join3(self.approval_item(id), self.timeline(id, 0), first_view).await;
        let Some(found) = found? else { return Ok(Viewed { loaded: None, events: Vec::new() }) };
        let (mut rows, mut recorded, mut event) = (timeline?, recorded?, event);
        let registered_at = found.get("createdAt").and_then(Value::as_i64).unwrap_or(0);
        let at = |r: &Value| r["at"].as_f64().unwrap_or(0.0) as i64;
        if rows.iter().any(|r| at(r) < registered_at) {
            // The ID was registered before and its events outlive its item: this registration's own timeline,
            // and its first view under a key of its own (the earlier one's holds the plain one). Rare: a chosen
            // ID used again; a second round trip then.
            let again = if recorded || keys.is_empty() {
                None
            } else {
                let once = format!("viewed:{registered_at}:{sub}");
                event = self.event_put((id, now, EventKind::Viewed), actor, &Map::new(), Some(&once));
                Some(vec![self.listed_check(id, &keys), event.clone()])
            };
            let write = async {
                match again {
                    Some(actions) => self.transact(actions).await,
                    None => Ok(recorded),
                }
            };
            let (own, written) = join(self.timeline(id, registered_at), write).await;
            rows = own?;
            recorded = written?;
        }
        if recorded {
            let own = event_row(&plain(id.as_str(), event["Put"]["Item"].as_object().unwrap_or(&Map::new()))?)?;
            if !rows.iter().any(|r| r["seq"] == own["seq"]) {
                rows.push(own);
            }
        }
        let position = |r: &Value| (r["at"].as_f64().unwrap_or(0.0) as i64, r["seq"].as_f64().unwrap_or(0.0) as i64);
        rows.sort_by_key(position);
        rows.truncate(TIMELINE_MAX as usize);
        let rows: Vec<EventRow> =
            rows.into_iter().map(|r| columns(id.as_str(), "event", r)).collect::<Result<_, _>>()?;
        let schedule = Self::schedule_view(&found, window_ms)?;
        Ok(Viewed { loaded: Some((Self::loaded(&found)?, schedule)), events: page_events(rows)? })
    }

    /// Events with `from <= at < to` after the cursor, in `(at, seq)` order: the months of the range, oldest
    /// first, through [`item::EVENTS_BY_MONTH`] (a key condition on the sort key, pages of the index).
    async fn audit_page(&self, q: &AuditQuery) -> Result<EventPage, ApiError> {
        let start = item::event_sort(q.from, 0);
        let lo = match q.cursor {
            Some(c) => start.max(item::event_sort(c.at, c.seq + 1)),
            None => start,
        };
        let hi = item::event_sort(q.to - 1, item::EVENT_SEQ_END);
        let first = q.cursor.map_or(q.from, |c| c.at.max(q.from));
        let mut rows = Vec::new();
        'months: for month in item::event_months(first, q.to) {
            let mut next: Option<Value> = None;
            loop {
                let mut body = json!({"IndexName": item::EVENTS_BY_MONTH,
                    "KeyConditionExpression": "#m = :m AND #s BETWEEN :lo AND :hi",
                    "ExpressionAttributeNames": {"#m": item::EVENT_MONTH, "#s": item::EVENT_SORT},
                    "ExpressionAttributeValues": {":m": {"S": month}, ":lo": {"S": lo}, ":hi": {"S": hi}},
                    "Limit": q.limit + 1 - rows.len()});
                if let Some(k) = next.take() {
                    body["ExclusiveStartKey"] = k;
                }
                let answer = self.ok("Query", body).await?;
                rows.extend(event_rows(&answer)?);
                if rows.len() > q.limit {
                    break 'months;
                }
                match answer.get("LastEvaluatedKey") {
                    Some(k) if !k.is_null() => next = Some(k.clone()),
                    _ => break,
                }
            }
        }
        let mut rows: Vec<EventRow> =
            rows.into_iter().map(|r| columns("audit", "event", r)).collect::<Result<_, _>>()?;
        let more = rows.len() > q.limit;
        rows.truncate(q.limit);
        let last = rows.last().filter(|_| more).map(|r| (r.at as i64, r.seq as i64));
        Ok(EventPage { events: events(rows)?, last })
    }
}
