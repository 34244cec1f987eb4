//! The DynamoDB backend (`STORAGE=dynamodb`): the seed design's token table (hash key `approvalId`) over the
//! DynamoDB JSON protocol, signed with SigV4 like the Step Functions calls. One item per approval (the
//! seed's item, ringi's attributes optional: `ringi_core::adapters::dynamo`), votes as a map on it, one index entry
//! per approver for the approver index (`approverUserId`), a `token#…` item that keeps one task token to
//! one approval, a `rate#…` counter per credential and minute, and one `event#…` item per audit event
//! (`ringi_core::adapters::dynamo::event_item`, read through two indexes of their own). The claim is one conditional
//! `UpdateItem` that also records the attempt, as D1's one conditional UPDATE. Every write is conditional
//! or keyed, so a retried write is the write once; a change with an event is one `TransactWriteItems`
//! holding both, so they land together or not at all.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use ringi_core::adapters::d1::D1_RETRY;
use ringi_core::adapters::dynamo::{
    self as item, approval_columns, classify, decision_columns, DdbOutcome, NewEvent, CONTENT_TYPE, KEY, TARGET_PREFIX,
};
use ringi_core::adapters::guard_ddb::{self as guard, Update, SEATS, SLOTS, VOTER_EMAILS, VOTES};
use ringi_core::adapters::mail::MailState;
use ringi_core::adapters::schedule_ddb::{self as schedule, ESCALATED_AT, REMINDED_AT};
use ringi_core::api::register::NewApproval;
use ringi_core::base::principal::Principal;
use ringi_core::config::{Config, DynamoDbConfig};
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::delegation::{listed, Seat};
use ringi_core::domain::rate::RateWindow;
use ringi_core::{ApiError, ApprovalId};
use serde_json::{json, Map, Value};
use worker::Delay;

use crate::aws::{signed_post, AwsPost, AwsService};
use crate::platform::{log, random_unit};
use crate::probe::Probe;
use crate::store::port::decision::Registrant;
use crate::store::port::records::{random_key, TIMELINE_MAX};
use crate::store::port::rows::{self, Approval, ApprovalRow, DecisionRow, InboxRow, Loaded, MailJob, MailRow};
use items::{columns, corrupt, event_rows, key, obj, one_line_expressions, plain, refused, secs_ceil, values, Item};

mod approvals;
mod audit;
mod governance;
mod items;
mod on_expiry;
mod push;
mod schedule_store;
mod upkeep;

/// The task's own deadline (ms) when it is later than the approvers' (an outcome on expiry).
pub(super) const TASK_EXPIRES: &str = "taskExpiresAtMs";
/// Approvals one cron run answers on expiry at most (D1's batch).
pub(super) const ON_EXPIRY_BATCH: usize = 25;
/// Index entries one inbox query reads per principal (a page is 20; the rest are filtered by status).
pub(super) const INBOX_QUERY_LIMIT: usize = 200;
/// Items one cron step scans per run (a backlog drains over runs).
pub(super) const CRON_SCAN_LIMIT: usize = 500;
/// Mails one cron run retries at most (D1's batch).
pub(super) const MAIL_RETRY_LIMIT: usize = 50;
/// Keys one BatchGetItem may ask for.
pub(super) const BATCH_GET_MAX: usize = 100;

/// The approvals whose event items a write (`PutItem`, or the Puts of a `TransactWriteItems`) puts.
fn written_events(op: &str, body: &Value) -> Vec<String> {
    let of = |i: &Value| i[item::EVENT_OF]["S"].as_str().map(str::to_owned);
    match op {
        "PutItem" => of(&body["Item"]).into_iter().collect(),
        "TransactWriteItems" => {
            body["TransactItems"].as_array().into_iter().flatten().filter_map(|a| of(&a["Put"]["Item"])).collect()
        }
        _ => Vec::new(),
    }
}

pub struct DynamoStore {
    cfg: Rc<Config>,
    ddb: DynamoDbConfig,
    probe: Rc<Probe>,
}

impl DynamoStore {
    pub fn new(cfg: Rc<Config>, ddb: DynamoDbConfig, probe: Rc<Probe>) -> Self {
        Self { cfg, ddb, probe }
    }

    pub fn probe(&self) -> &Probe {
        &self.probe
    }

    /// One DynamoDB operation, retried with bounded jittered backoff while the answer is transient (every
    /// write here is conditional or keyed). Throttling and 5xx after the last try are 503; a refusal
    /// (validation, access) is answered as is to the caller, which decides; nothing of a request or of an
    /// error message — either may carry a token or key values — is logged, only the error's type.
    async fn call(&self, op: &'static str, mut body: Value) -> Result<DdbOutcome, ApiError> {
        if let Some(o) = body.as_object_mut() {
            o.insert("TableName".into(), Value::from(self.ddb.table.as_str()));
        }
        one_line_expressions(&mut body);
        let events = written_events(op, &body);
        let body = body.to_string();
        let url = format!("{}/", self.ddb.endpoint.trim_end_matches('/'));
        let target = format!("{TARGET_PREFIX}{op}");
        let headers = [("content-type", CONTENT_TYPE), ("x-amz-target", target.as_str())];
        let timeout = Duration::from_millis(D1_RETRY.attempt_timeout_ms);
        let mut attempt = 1;
        // An attempt that got no answer may have been applied: its events are then sealed after the response even
        // when the retry's own condition fails because of it (sealing an approval with nothing unsealed changes
        // nothing).
        let mut maybe_applied = false;
        loop {
            let outcome = match signed_post(
                &self.cfg,
                &self.probe,
                &AwsPost { url: &url, service: AwsService::DynamoDb, headers: &headers, body: &body, timeout },
            )
            .await
            {
                Ok((status, text)) => classify(status, &text),
                Err(e) => {
                    DdbOutcome::Transient(if e.contains("no answer") { "timeout".into() } else { "network".into() })
                }
            };
            maybe_applied |= matches!(outcome, DdbOutcome::Transient(_));
            if !events.is_empty() && (maybe_applied || matches!(outcome, DdbOutcome::Ok(_))) {
                // Sealed into their approvals' hash chains after the response.
                self.probe.wrote_events(events.iter().cloned());
            }
            match outcome {
                DdbOutcome::Transient(ty) if attempt < D1_RETRY.max_attempts => {
                    log("info", "ddb_retry", json!({"op": op, "attempt": attempt, "error": ty}));
                    Delay::from(Duration::from_millis(D1_RETRY.backoff_ms(attempt, random_unit()))).await;
                    attempt += 1;
                }
                DdbOutcome::Transient(ty) => {
                    log("warn", "ddb_failed", json!({"op": op, "tries": attempt, "error": ty}));
                    return Err(ApiError::storage_unavailable());
                }
                other => return Ok(other),
            }
        }
    }

    /// An operation whose only acceptable answer is success.
    async fn ok(&self, op: &'static str, body: Value) -> Result<Value, ApiError> {
        match self.call(op, body).await? {
            DdbOutcome::Ok(v) => Ok(v),
            other => Err(refused(op, &other)),
        }
    }

    /// A conditional write: `Ok(Some(answer))` if it was made, `Ok(None)` if its condition did not hold.
    async fn conditional(&self, op: &'static str, body: Value) -> Result<Option<Value>, ApiError> {
        match self.call(op, body).await? {
            DdbOutcome::Ok(v) => Ok(Some(v)),
            DdbOutcome::ConditionFailed => Ok(None),
            other => Err(refused(op, &other)),
        }
    }

    /// The item under `k` (strongly consistent), as plain JSON.
    async fn item(&self, k: &str) -> Result<Option<Item>, ApiError> {
        let answer = self.ok("GetItem", json!({"Key": key(k), "ConsistentRead": true})).await?;
        answer.get("Item").and_then(Value::as_object).map(|i| plain(k, i)).transpose()
    }

    /// The approval items of `ids` (BatchGetItem, consistent), unprocessed keys asked again once.
    async fn items(&self, ids: &[String]) -> Result<Vec<Item>, ApiError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(BATCH_GET_MAX) {
            let mut keys: Vec<Value> = chunk.iter().map(|id| key(id)).collect();
            for _ in 0..2 {
                if keys.is_empty() {
                    break;
                }
                let request = json!({"RequestItems": {&self.ddb.table: {"Keys": keys, "ConsistentRead": true}}});
                let answer = self.ok("BatchGetItem", request).await?;
                for i in answer["Responses"][&self.ddb.table].as_array().into_iter().flatten() {
                    if let Some(i) = i.as_object() {
                        out.push(plain("batch", i)?);
                    }
                }
                keys = answer["UnprocessedKeys"][&self.ddb.table]["Keys"].as_array().cloned().unwrap_or_default();
            }
        }
        Ok(out)
    }

    /// The Put of one event, for the transaction of the change it records. Its key is drawn here, once per write,
    /// so a retry of the same write puts the same item again; an event that happens once per registration
    /// (`decided`, `voted`, `expired` …) is once because the change it records is conditional — a key of its own
    /// would outlive the approval's item and refuse the same ID registered again. `once`: an event with no such
    /// change (the first view), written only if its key is absent.
    fn event_put(&self, e: (&ApprovalId, i64, EventKind), actor: &Actor, detail: &Item, once: Option<&str>) -> Value {
        let (id, at, kind) = e;
        let dedupe_key = once.map_or_else(|| random_key(id), |k| format!("{}:{k}", id.as_str()));
        let event = NewEvent { approval_id: id.as_str(), at, kind, actor, detail, dedupe_key: &dedupe_key };
        let item = item::event_item(&event, self.cfg.audit_retention_ms);
        let mut put = json!({"Put": {"TableName": self.ddb.table, "Item": item}});
        if once.is_some() {
            put["Put"]["ConditionExpression"] = Value::from("attribute_not_exists(approvalId)");
        }
        put
    }

    /// An UpdateItem's body as one action of a transaction.
    fn tx_update(&self, mut body: Value) -> Value {
        body["TableName"] = Value::from(self.ddb.table.as_str());
        json!({ "Update": body })
    }

    /// A change and its event in one TransactWriteItems: `true` if made, `false` if a condition did not hold
    /// (then nothing of it was written: a lost race, or a retry of a write that went through).
    async fn transact(&self, actions: Vec<Value>) -> Result<bool, ApiError> {
        match self.call("TransactWriteItems", json!({"TransactItems": actions})).await? {
            DdbOutcome::Ok(_) => Ok(true),
            DdbOutcome::Cancelled(r) if r.iter().any(|c| c == "ConditionalCheckFailed") => Ok(false),
            other => Err(refused("TransactWriteItems", &other)),
        }
    }

    /// [`Self::transact`] of a write into the item's maps (`ringi_core::adapters::guard_ddb`), whose guards require
    /// them: an item written before them (the seed's, or an older worker's) lacks them, which DynamoDB answers
    /// as a failed condition or an invalid document path; the item then gets them ([`Self::upgrade`]) and the
    /// transaction is made again. `false`: a condition did not hold (nothing was written).
    async fn transact_guarded(&self, id: &ApprovalId, actions: Vec<Value>) -> Result<bool, ApiError> {
        let body = json!({"TransactItems": actions});
        let invalid = match self.call("TransactWriteItems", body.clone()).await? {
            DdbOutcome::Ok(_) => return Ok(true),
            DdbOutcome::Cancelled(r) if r.iter().any(|c| c == "ConditionalCheckFailed") => None,
            DdbOutcome::Cancelled(r) if r.iter().any(|c| c == "ValidationError") => Some(DdbOutcome::Cancelled(r)),
            DdbOutcome::Permanent(ty) if ty == "ValidationException" => Some(DdbOutcome::Permanent(ty)),
            other => return Err(refused("TransactWriteItems", &other)),
        };
        if !self.upgrade(id).await? {
            // The item has its maps: a failed condition is a lost race; an invalid request is a bug.
            return match invalid {
                None => Ok(false),
                Some(outcome) => Err(refused("TransactWriteItems", &outcome)),
            };
        }
        self.transact(body["TransactItems"].as_array().cloned().unwrap_or_default()).await
    }

    /// Gives an item written before ringi's maps its maps (`guard::upgrade`, only if still absent); `true` if
    /// it lacked them.
    async fn upgrade(&self, id: &ApprovalId) -> Result<bool, ApiError> {
        let Some(current) = self.approval_item(id).await? else { return Ok(false) };
        let Some(u) = guard::upgrade(&current).map_err(corrupt(id.as_str()))? else { return Ok(false) };
        self.conditional("UpdateItem", u.body(id.as_str())).await?;
        Ok(true)
    }

    /// An UpdateItem of the approval `id` as one action of a transaction.
    fn tx_guarded(&self, id: &ApprovalId, u: &Update) -> Value {
        self.tx_update(u.body(id.as_str()))
    }

    /// The approval's events (oldest first, [`TIMELINE_MAX`] at most) as D1's event rows, through
    /// [`item::EVENTS_BY_APPROVAL`].
    /// `from`: only events at or after it (an ID registered again: its own registration's).
    async fn timeline(&self, id: &ApprovalId, from: i64) -> Result<Vec<Value>, ApiError> {
        let answer = self
            .ok(
                "Query",
                json!({"IndexName": item::EVENTS_BY_APPROVAL, "KeyConditionExpression": "#o = :id AND #s >= :from",
                       "ExpressionAttributeNames": {"#o": item::EVENT_OF, "#s": item::EVENT_SORT},
                       "ExpressionAttributeValues": {":id": {"S": id.as_str()}, ":from": {"S": item::event_sort(from, 0)}},
                       "Limit": TIMELINE_MAX}),
            )
            .await?;
        event_rows(&answer)
    }

    /// The ConditionCheck that the caller (`keys`: their principal keys) is a listed approver of `id`: in
    /// ringi's `approvers`, or the seed item's `approverUserId`.
    fn listed_check(&self, id: &ApprovalId, keys: &[String]) -> Value {
        let mut vals = Map::new();
        let mut listed = Vec::new();
        let mut seed = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            listed.push(format!("contains(approvers, :p{i})"));
            vals.insert(format!(":p{i}"), json!({ "S": k }));
            if let Some(p) = Principal::from_key(k) {
                seed.push(format!(":u{i}"));
                vals.insert(format!(":u{i}"), json!({"S": item::index_key(&p)}));
            }
        }
        if !seed.is_empty() {
            listed.push(format!("{} IN ({})", item::INDEX_KEY, seed.join(", ")));
        }
        json!({"ConditionCheck": {"TableName": self.ddb.table, "Key": key(id.as_str()),
            "ConditionExpression": format!("attribute_exists(approvalId) AND ({})", listed.join(" OR ")),
            "ExpressionAttributeValues": vals}})
    }

    /// The body of [`ApprovalStore::release`]'s update; `forget`: the claim's own attempt record goes too.
    fn release_body(id: &ApprovalId, claim_id: &str, forget: bool) -> Value {
        let (remove, cond) = if forget { (", attempt", " AND attempt.id = :cid") } else { ("", "") };
        json!({"Key": key(id.as_str()),
            "UpdateExpression": format!("SET #st = :pending REMOVE claimId, claimedUntil{remove}"),
            "ConditionExpression": format!("claimId = :cid AND #st = :claimed{cond}"),
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":pending": "pending", ":claimed": "claimed", ":cid": claim_id}))})
    }

    fn approval(item: &Item) -> Result<Approval, ApiError> {
        let id = item.get(KEY).and_then(Value::as_str).unwrap_or("");
        let cols = approval_columns(item).map_err(corrupt(id))?;
        columns::<ApprovalRow>(id, "approval", cols)?.typed()
    }

    fn loaded(item: &Item) -> Result<Loaded, ApiError> {
        let approval = Self::approval(item)?;
        let id = approval.id.clone();
        let seats = guard::seats(item).map_err(corrupt(id.as_str()))?;
        let decisions: Vec<DecisionRow> =
            decision_columns(item).into_iter().map(|d| columns(id.as_str(), "vote", d)).collect::<Result<_, _>>()?;
        Ok(Loaded { principals: listed(&seats), seats, votes: rows::votes(&id, decisions)?, approval })
    }

    /// The item of approval `id` (not an index entry, nor a token or rate item: their keys hold a `#`, which
    /// an approval ID never does).
    async fn approval_item(&self, id: &ApprovalId) -> Result<Option<Item>, ApiError> {
        self.item(id.as_str()).await
    }

    /// The IDs of the items `filter` matches, `limit` at most (see [`Self::scan`]).
    async fn scan_ids(&self, filter: &str, vals: Value, limit: usize) -> Result<Vec<String>, ApiError> {
        let items = self.scan(filter, vals, limit, Some(KEY)).await?;
        Ok(items.iter().filter_map(|i| i.get(KEY).and_then(Value::as_str).map(str::to_owned)).collect())
    }

    /// The approval items `filter` matches (`limit` at most), read consistently (BatchGetItem) after the Scan found
    /// them; index entries, token and rate items never parse as an approval ID and are left out.
    async fn scan_approvals(&self, filter: &str, vals: Value, limit: usize) -> Result<Vec<Item>, ApiError> {
        let ids = self.scan_ids(filter, vals, limit).await?;
        let ids: Vec<String> = ids.into_iter().filter(|i| ApprovalId::parse(i).is_ok()).collect();
        self.items(&ids).await
    }

    /// The items `filter` matches (`projection`: only those attributes), `limit` at most: a Scan, page after page
    /// (one request per MB of table while nothing matches), eventually consistent — a write made from what it
    /// read is conditional on what it read. The cron's look-ups: no index serves "due", and it runs every 5 minutes.
    async fn scan(
        &self,
        filter: &str,
        vals: Value,
        limit: usize,
        projection: Option<&str>,
    ) -> Result<Vec<Item>, ApiError> {
        let mut items = Vec::new();
        let mut start: Option<Value> = None;
        while items.len() < limit {
            let mut body = json!({"FilterExpression": filter, "ExpressionAttributeValues": values(vals.clone())});
            // DynamoDB refuses a name placeholder the request does not use.
            if filter.contains("#st") {
                body["ExpressionAttributeNames"] = json!({"#st": "status"});
            }
            if let Some(p) = projection {
                body["ProjectionExpression"] = Value::from(p);
            }
            if let Some(s) = start.take() {
                body["ExclusiveStartKey"] = s;
            }
            let answer = self.ok("Scan", body).await?;
            for i in answer["Items"].as_array().into_iter().flatten().filter_map(Value::as_object) {
                items.push(plain("scan", i)?);
            }
            match answer.get("LastEvaluatedKey") {
                Some(k) if !k.is_null() => start = Some(k.clone()),
                _ => break,
            }
        }
        items.truncate(limit);
        Ok(items)
    }

    /// The registration's one transaction: the credential's count for this minute (refused past its rate),
    /// the approval with its `seats` (unless its ID is taken), its token's item (unless the token is taken),
    /// and one index entry per seat.
    fn registration(
        &self,
        id: &ApprovalId,
        a: &NewApproval,
        seats: &[Seat],
        registrant: &Registrant<'_>,
        now: i64,
        remind_window_ms: i64,
    ) -> Vec<Value> {
        let window_start = RateWindow::at(now).start;
        // The task's deadline (later than the approvers' with an outcome on expiry) keeps the items.
        let ttl = secs_ceil(a.task_expires_at.unwrap_or(a.expires_at));
        let rate = json!({"Update": {"TableName": self.ddb.table, "Key": key(&item::rate_key(registrant.label, window_start)),
            "UpdateExpression": "SET #c = if_not_exists(#c, :zero) + :one, expiresAt = :ttl",
            "ConditionExpression": "attribute_not_exists(#c) OR #c < :limit",
            "ExpressionAttributeNames": {"#c": "count"},
            "ExpressionAttributeValues": values(json!({":zero": 0, ":one": 1, ":limit": registrant.rate_per_minute,
                ":ttl": (window_start + 120_000) / 1000}))}});
        let approval = json!({
            KEY: id.as_str(), "taskToken": a.token.expose(), "tokenSha256": a.token.fingerprint(),
            "requestSha256": a.request_sha256, "status": "pending", "confirmed": 1, "title": a.title,
            "summary": a.summary, "detailsJson": Value::Object(a.details.clone()).to_string(),
            "formJson": serde_json::to_string(&a.form).unwrap_or_else(|_| "[]".into()),
            "quorum": a.quorum.as_string(), "approverCount": a.approvers.len(),
            "approvers": a.approvers.iter().map(Principal::key).collect::<Vec<_>>(),
            "contextJson": Value::Object(a.context.clone()).to_string(),
            "notifyJson": serde_json::to_string(&a.notify).unwrap_or_else(|_| "[]".into()),
            "createdAt": now, "expiresAt": ttl, "expiresAtMs": a.expires_at,
            "mailState": MailState::initial(a.notify.len()).as_str(), "mailAttempts": 0,
            "registeredBy": registrant.label,
            "requestedByJson": Value::from(a.requested_by.iter().map(Principal::key).collect::<Vec<_>>()).to_string(),
            "allowSelfApproval": a.allow_self_approval, "onExpiry": a.on_expiry.as_str(), "decidedOnExpiry": false,
            VOTES: {}, SLOTS: {}, VOTER_EMAILS: {}, SEATS: guard::seats_value(seats),
            // The chat channels: all of them due, delivered after the response like the mail.
            "chatDueJson": serde_json::to_string(&a.channels).unwrap_or_else(|_| "[]".into()),
            "chatState": MailState::initial(a.channels.len()).as_str(), "chatAttempts": 0,
        });
        let mut approval = obj(approval);
        approval.extend(schedule::registration_attrs(&a.schedule));
        if let Some(at) =
            ringi_core::domain::schedule::reminded_at_registration(&a.schedule, now, a.expires_at, remind_window_ms)
        {
            approval.insert(REMINDED_AT.into(), at.into());
        }
        let mut approval = item::to_item(&approval);
        if let Some(t) = a.task_expires_at {
            approval.insert(TASK_EXPIRES.into(), json!({"N": t.to_string()}));
        }
        if let Some(l) = a.locale {
            approval.insert("locale".into(), json!({"S": l.as_str()}));
        }
        if let Some(r) = &a.require_sign_in {
            let r = serde_json::to_string(r).unwrap_or_else(|_| "{}".into());
            approval.insert("requireSignInJson".into(), json!({"S": r}));
        }
        if let Some(t) = &a.target {
            approval.insert("awsAccount".into(), json!({"S": t.account.as_str()}));
            approval.insert("awsRegion".into(), json!({"S": t.region.as_str()}));
        }
        let put = |item: Value| json!({"Put": {"TableName": self.ddb.table, "Item": item, "ConditionExpression": "attribute_not_exists(approvalId)"}});
        let token = item::to_item(&obj(
            json!({KEY: item::token_key(&a.token.fingerprint()), "ref": id.as_str(), "expiresAt": ttl}),
        ));
        let mut actions = vec![rate, put(Value::Object(approval)), put(Value::Object(token))];
        actions.extend(seats.iter().map(|s| self.index_put(id, &s.principal, ttl)));
        actions
    }

    /// The approver-index entry of a seat (the inbox finds the approval through it); `ttl`: the approval's.
    fn index_put(&self, id: &ApprovalId, p: &Principal, ttl: i64) -> Value {
        json!({"Put": {"TableName": self.ddb.table, "Item": item::to_item(&obj(json!({
            KEY: item::index_entry_key(id.as_str(), p), item::INDEX_KEY: item::index_key(p), "expiresAt": ttl})))}})
    }

    /// What a mail of one approval item needs (D1's mail row).
    fn mail_job_of(item: &Item) -> Result<MailJob, ApiError> {
        let id = item.get(KEY).and_then(Value::as_str).unwrap_or("");
        let mut cols = approval_columns(item).map_err(corrupt(id))?;
        cols["notify_json"] = Value::from(item.get("notifyJson").and_then(Value::as_str).unwrap_or("[]"));
        cols["chat_due_json"] = Value::from(item.get("chatDueJson").and_then(Value::as_str).unwrap_or("[]"));
        let row: MailRow = columns(id, "mail", cols)?;
        rows::mail_job(row)
    }

    /// An inbox row (the columns of D1's inbox query) of one approval item.
    fn inbox_row(item: &Item, pending: bool, principals: &[Principal]) -> Result<(InboxRow, String), ApiError> {
        let id = item.get(KEY).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut cols = approval_columns(item).map_err(corrupt(&id))?;
        // The caller's seat handed on: the inbox says to whom (D1's `delegated_to` of their row).
        let seats = guard::seats(item).map_err(corrupt(&id))?;
        let mine = |s: &&Seat| principals.iter().any(|p| p.normalized() == s.principal.normalized());
        cols["delegated_to"] =
            seats.iter().filter(mine).find_map(|s| s.delegated_to.as_ref().map(Principal::key)).into();
        let approved: BTreeSet<String> = decision_columns(item)
            .iter()
            .filter(|d| d["decision"] == "approve")
            .filter_map(|d| d["principal"].as_str().map(str::to_owned))
            .collect();
        let sort_at = if pending { cols["expires_at"].clone() } else { cols["decided_at"].clone() };
        let sort_at = if sort_at.is_null() { cols["expires_at"].clone() } else { sort_at };
        cols["sort_at"] = sort_at;
        cols["approvals"] = Value::from(approved.len());
        cols["escalated_at"] = item.get(ESCALATED_AT).cloned().unwrap_or(Value::Null);
        Ok((columns(&id, "inbox", cols)?, id))
    }
}
