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

use futures_util::future::{join, join3, join_all};
use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::adapters::d1::D1_RETRY;
use ringi_core::adapters::dynamo::{
    self as item, approval_columns, attempt_columns, classify, decision_columns, event_columns, DdbOutcome, NewEvent,
    CONTENT_TYPE, KEY, TARGET_PREFIX,
};
use ringi_core::adapters::guard_ddb::{self as guard, Expr, Update, VoteWrite, SEATS, SLOTS, VOTER_EMAILS, VOTES};
use ringi_core::adapters::mail::MailState;
use ringi_core::adapters::schedule_ddb::{self as schedule, ESCALATED_AT, REMINDED_AT};
use ringi_core::api::audit_export::AuditQuery;
use ringi_core::api::register::NewApproval;
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::config::{Config, DynamoDbConfig};
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::delegation::{listed, principal_value, OutOfOfficeRequest, Seat};
use ringi_core::domain::inbox::{Cursor, InboxFilter};
use ringi_core::domain::on_expiry::{event_detail, OnExpiry};
use ringi_core::domain::rate::RateWindow;
use ringi_core::domain::rules::{self, Absence, Guard, Handover, Reassignment, Routing};
use ringi_core::domain::self_approval::Requesters;
use ringi_core::domain::vote::RecordedVote;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use worker::Delay;

use super::approvals::Registered;
use super::backend::{ApprovalStore, GovernanceStore, OnExpiryStore};
use super::delegation::OutOfOfficeRow;
use super::events::{events, random_key, EventPage, EventRow, Viewed, TIMELINE_MAX};
use super::maintenance::Retries;
use super::on_expiry::DueOutcome;
use super::rows::{self, ApprovalRow, AttemptRow, DecisionRow, InboxEntry, InboxRow, MailRow};
use super::{
    Approval, Attempt, CallbackFailure, ClaimRequest, Guess, Inserted, Loaded, MailJob, Opened, Registrant, Vote,
};
use crate::aws::{signed_post, AwsPost, AwsService};
use crate::platform::{log, random_unit};
use crate::probe::Probe;

mod schedule_store;

/// The task's own deadline (ms) when it is later than the approvers' (an outcome on expiry).
const TASK_EXPIRES: &str = "taskExpiresAtMs";
/// Approvals one cron run answers on expiry at most (D1's batch).
const ON_EXPIRY_BATCH: usize = 25;
/// Index entries one inbox query reads per principal (a page is 20; the rest are filtered by status).
const INBOX_QUERY_LIMIT: usize = 200;
/// Items one cron step scans per run (a backlog drains over runs).
const CRON_SCAN_LIMIT: usize = 500;
/// Mails one cron run retries at most (D1's batch).
const MAIL_RETRY_LIMIT: usize = 50;
/// Keys one BatchGetItem may ask for.
const BATCH_GET_MAX: usize = 100;

pub struct DynamoStore {
    cfg: Rc<Config>,
    ddb: DynamoDbConfig,
    probe: Rc<Probe>,
}

type Item = Map<String, Value>;

fn obj(v: Value) -> Item {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

/// A key attribute.
fn key(k: &str) -> Value {
    json!({ KEY: {"S": k} })
}

/// Expression attribute values, from plain JSON.
fn values(v: Value) -> Value {
    Value::Object(item::to_item(&obj(v)))
}

/// Typed reading of columns through the D1 row types; a value no domain value maps to is a 500.
fn columns<T: DeserializeOwned>(id: &str, what: &'static str, v: Value) -> Result<T, ApiError> {
    serde_json::from_value(v).map_err(|e| {
        log("error", "corrupt_row", json!({"approvalId": id, "what": what, "error": e.to_string()}));
        ApiError::Internal
    })
}

fn corrupt(id: &str) -> impl Fn(ringi_core::base::corrupt::CorruptValue) -> ApiError + '_ {
    rows::corrupt(id)
}

/// The approval ID of an approver index entry (`{id}#approver#…`), or of the seed's own item (its key).
fn approval_of_index_entry(k: &str) -> &str {
    k.split_once("#approver#").map_or(k, |(id, _)| id)
}

/// Milliseconds to whole seconds, rounded up (the table's TTL attribute `expiresAt`).
fn secs_ceil(ms: i64) -> i64 {
    ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)
}

/// The open-item condition shared by the claim and the cron: a token, not past expiry (ringi's `expiresAtMs`,
/// else the seed's `expiresAt` in seconds), and pending (the seed's items may have no status, or `PENDING`).
const OPEN: &str = "attribute_exists(taskToken)
    AND (expiresAtMs > :now OR (attribute_not_exists(expiresAtMs) AND expiresAt > :now_s))
    AND (attribute_not_exists(#st) OR #st IN (:pending, :seed_pending) OR (#st = :claimed AND (claimedUntil <= :now OR claimId = :cid)))";

fn open_values(now: i64, claim_id: &str) -> Value {
    json!({":now": now, ":now_s": now.div_euclid(1000), ":pending": "pending", ":seed_pending": "PENDING",
           ":claimed": "claimed", ":cid": claim_id})
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// A vote as the item's `votes` map keeps it (sub → this).
fn vote_value(v: &Vote<'_>) -> Value {
    json!({"principal": v.principal.key(), "email": v.email, "username": v.username, "decision": v.verdict.as_str(),
           "comment": v.comment, "feedbackJson": v.feedback.map(|f| Value::Object(f.clone()).to_string()), "at": v.at})
}

/// How the item records `v`: its `votes` entry and, for an approval, the slot it satisfies and its person.
fn vote_write<'a>(v: &'a Vote<'a>) -> VoteWrite<'a> {
    VoteWrite {
        sub: v.sub,
        value: vote_value(v),
        approves: (v.verdict == Verdict::Approve).then_some((&v.principal, v.email)),
    }
}

/// `base` (plain JSON placeholders of the hand-written part of a request) with the placeholders of `e` added.
fn with_expr(names: Value, vals: Value, e: Expr) -> (Value, Value) {
    (merge(names, Value::Object(e.names)), merge(values(vals), Value::Object(e.values)))
}

/// The stored status of an attempt's verdict (D1's `ATTEMPT_STATUS`).
fn attempt_status(verdict: Option<&str>) -> &'static str {
    if verdict == Some("reject") {
        ApprovalStatus::Rejected.as_str()
    } else {
        ApprovalStatus::Approved.as_str()
    }
}

/// Who made the attempt on record (its `sub` and `by`), as the event log names them: the system without a sub.
fn attempt_actor(attempt: &Item) -> Actor {
    match attempt.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(sub) => Actor::User {
            sub: sub.to_owned(),
            display: attempt.get("by").and_then(Value::as_str).unwrap_or(sub).to_owned(),
        },
        None => Actor::System,
    }
}

/// The detail of a `decided` event of an attempt that may have been delivered (its verdict, unconfirmed).
fn unconfirmed_detail(attempt: &Item) -> Item {
    obj(json!({"verdict": attempt.get("verdict").and_then(Value::as_str), "confirmed": false,
               "status": ApprovalStatus::DecidedUnconfirmed.as_str()}))
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
        let body = body.to_string();
        let url = format!("{}/", self.ddb.endpoint.trim_end_matches('/'));
        let target = format!("{TARGET_PREFIX}{op}");
        let headers = [("content-type", CONTENT_TYPE), ("x-amz-target", target.as_str())];
        let timeout = Duration::from_millis(D1_RETRY.attempt_timeout_ms);
        let mut attempt = 1;
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
            match outcome {
                DdbOutcome::Transient(ty) if attempt < D1_RETRY.max_attempts => {
                    log("info", "ddb_retry", json!({"op": op, "attempt": attempt, "error": ty}));
                    Delay::from(Duration::from_millis(D1_RETRY.backoff_ms(attempt, random_unit()))).await;
                    attempt += 1;
                }
                DdbOutcome::Transient(ty) => {
                    log("warn", "ddb_failed", json!({"op": op, "tries": attempt, "error": ty}));
                    return Err(ApiError::StorageUnavailable);
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

/// Expressions are written across lines here for reading; sent on one line (DynamoDB takes either, moto's
/// parser only one).
fn one_line_expressions(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    Value::String(s) if k.ends_with("Expression") => {
                        *s = s.split_whitespace().collect::<Vec<_>>().join(" ")
                    }
                    other => one_line_expressions(other),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(one_line_expressions),
        _ => {}
    }
}

/// A refusal DynamoDB will repeat (validation, access, an unknown table): a configuration error or a bug.
fn refused(op: &str, outcome: &DdbOutcome) -> ApiError {
    let ty = match outcome {
        DdbOutcome::Permanent(t) | DdbOutcome::Transient(t) => t.clone(),
        DdbOutcome::ConditionFailed => "ConditionalCheckFailedException".into(),
        DdbOutcome::Cancelled(r) => format!("TransactionCanceled {r:?}"),
        DdbOutcome::Ok(_) => "ok".into(),
    };
    log(
        "error",
        "ddb_refused",
        json!({"op": op, "error": ty,
        "action": "check DYNAMODB_TABLE, DYNAMODB_INDEX, the region and the worker's IAM policy (GetItem, PutItem, UpdateItem, ConditionCheckItem, Query, DeleteItem, BatchGetItem, Scan on the table and its indexes)"}),
    );
    ApiError::Internal
}

fn plain(k: &str, i: &Item) -> Result<Item, ApiError> {
    item::from_item(i).ok_or_else(|| {
        log(
            "error",
            "corrupt_row",
            json!({"approvalId": approval_of_index_entry(k), "error": "unknown attribute type"}),
        );
        ApiError::Internal
    })
}

/// The event items of a Query's answer as D1's event rows (`seq`, `at` … as `approval_events` names them).
fn event_rows(answer: &Value) -> Result<Vec<Value>, ApiError> {
    let items = answer["Items"].as_array().into_iter().flatten().filter_map(Value::as_object);
    items.map(|i| event_row(&plain("event", i)?)).collect()
}

fn event_row(i: &Item) -> Result<Value, ApiError> {
    let id = i.get(item::EVENT_OF).and_then(Value::as_str).unwrap_or("event");
    event_columns(i).map_err(corrupt(id))
}

impl ApprovalStore for DynamoStore {
    async fn get(&self, id: &ApprovalId) -> Result<Option<Approval>, ApiError> {
        self.approval_item(id).await?.as_ref().map(Self::approval).transpose()
    }

    async fn load(&self, id: &ApprovalId) -> Result<Option<Loaded>, ApiError> {
        self.approval_item(id).await?.as_ref().map(Self::loaded).transpose()
    }

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
        Ok(Viewed { loaded: Some((Self::loaded(&found)?, schedule)), events: events(rows)? })
    }

    async fn insert(
        &self,
        id: &ApprovalId,
        a: &NewApproval,
        registrant: &Registrant<'_>,
        now: i64,
        remind_window_ms: i64,
    ) -> Result<Inserted, ApiError> {
        // Out-of-office routing in the registration's own transaction: the listed people's absences (one
        // BatchGetItem), `rules::route` decides, the routed seats and their events are written with the approval.
        let absences = self.absences(&a.approvers, now).await?;
        let requesters = Requesters { principals: &a.requested_by, allow_self_approval: a.allow_self_approval };
        let routed = rules::route(&a.approvers, &absences, &requesters);
        let seats = guard::routed_seats(&a.approvers, &routed);
        let mut actions = self.registration(id, a, &seats, registrant, now, remind_window_ms);
        for r in &routed {
            let detail = obj(json!({"from": principal_value(&r.slot), "to": principal_value(&r.stand_in)}));
            actions.push(self.event_put((id, now, EventKind::Routed), &Actor::System, &detail, None));
        }
        let detail =
            obj(json!({"approvers": a.approvers.len(), "quorum": a.quorum.as_string(), "notified": a.notify.len()}));
        let registrant_actor = Actor::Registrant { id: registrant.label.to_owned() };
        actions.push(self.event_put((id, now, EventKind::Registered), &registrant_actor, &detail, None));
        match self.call("TransactWriteItems", json!({"TransactItems": actions})).await? {
            DdbOutcome::Ok(_) => {
                Ok(Inserted::Created { routed: routed.into_iter().map(|r: Routing| (r.slot, r.stand_in)).collect() })
            }
            DdbOutcome::Cancelled(reasons) if reasons.first().is_some_and(|r| r == "ConditionalCheckFailed") => {
                Ok(Inserted::RateLimited { retry_after: RateWindow::at(now).retry_after_secs })
            }
            DdbOutcome::Cancelled(reasons) if reasons.iter().any(|r| r == "ConditionalCheckFailed") => {
                Ok(Inserted::Exists)
            }
            other => Err(refused("TransactWriteItems", &other)),
        }
    }

    async fn registered(&self, id: &ApprovalId, token_sha256: &str) -> Result<Vec<Registered>, ApiError> {
        let mut ids = vec![id.as_str().to_owned()];
        if let Some(t) = self.item(&item::token_key(token_sha256)).await? {
            ids.extend(t.get("ref").and_then(Value::as_str).filter(|r| *r != id.as_str()).map(str::to_owned));
        }
        let mut out = Vec::new();
        for i in self.items(&ids).await? {
            let Some(rid) = i.get(KEY).and_then(Value::as_str) else { continue };
            // A seed item keeps no fingerprint: it is its token's.
            let sha = i.get("tokenSha256").and_then(Value::as_str).map(str::to_owned).or_else(|| {
                i.get("taskToken")
                    .and_then(Value::as_str)
                    .and_then(|t| TaskToken::parse(t).ok())
                    .map(|t| t.fingerprint())
            });
            out.push(Registered {
                id: rid.to_owned(),
                token_sha256: sha.unwrap_or_default(),
                request_sha256: i.get("requestSha256").and_then(Value::as_str).map(str::to_owned),
                expires_at: item::expires_at_ms(&i).unwrap_or(0) as f64,
            });
        }
        Ok(out)
    }

    /// One Query of the approver index per principal (at once), then the approvals themselves
    /// (BatchGetItem): the index keeps keys only, the approval item is the one source of its state.
    async fn inbox(
        &self,
        who: &Identity,
        principals: &[Principal],
        filter: InboxFilter,
        now: i64,
        cursor: Option<Cursor>,
        limit: usize,
    ) -> Result<Vec<InboxEntry>, ApiError> {
        let queries = principals.iter().map(|p| {
            self.ok(
                "Query",
                json!({"IndexName": self.ddb.index, "KeyConditionExpression": "#k = :k",
                       "ExpressionAttributeNames": {"#k": item::INDEX_KEY},
                       "ExpressionAttributeValues": {":k": {"S": item::index_key(p)}}, "Limit": INBOX_QUERY_LIMIT}),
            )
        });
        let mut ids = BTreeSet::new();
        for answer in join_all(queries).await {
            for i in answer?["Items"].as_array().into_iter().flatten() {
                if let Some(k) = i[KEY]["S"].as_str() {
                    ids.insert(approval_of_index_entry(k).to_owned());
                }
            }
        }
        let ids: Vec<String> = ids.into_iter().filter(|i| ApprovalId::parse(i).is_ok()).collect();
        let pending = filter == InboxFilter::Pending;
        let mut rows = Vec::new();
        for i in self.items(&ids).await? {
            if !i.contains_key("expiresAt") && !i.contains_key("expiresAtMs") {
                continue;
            }
            let (row, id) = Self::inbox_row(&i, pending, principals)?;
            let entry = row.typed(now, who)?;
            let open = matches!(entry.item.status, ApprovalStatus::Pending | ApprovalStatus::Claimed);
            if open == pending {
                rows.push((entry, id));
            }
        }
        // D1's order: pending by expiry, soonest first; decided newest first; the cursor is the last shown.
        rows.sort_by(|(a, ia), (b, ib)| (a.sort_at, ia).cmp(&(b.sort_at, ib)));
        if !pending {
            rows.reverse();
        }
        let after = |e: &InboxEntry, id: &str| match &cursor {
            None => true,
            Some(c) if pending => (e.sort_at, id) > (c.sort_at, c.id.as_str()),
            Some(c) => (e.sort_at, id) < (c.sort_at, c.id.as_str()),
        };
        Ok(rows.into_iter().filter(|(e, id)| after(e, id)).map(|(e, _)| e).take(limit).collect())
    }

    async fn votes(&self, id: &ApprovalId) -> Result<Vec<RecordedVote>, ApiError> {
        Ok(self.load(id).await?.map(|l| l.votes).unwrap_or_default())
    }

    /// The load alone: the route then claims (a deciding verdict) or records the vote, each one conditional
    /// write of its own.
    async fn open_decision(&self, id: &ApprovalId, _guess: Option<&Guess<'_>>) -> Result<Opened, ApiError> {
        Ok(Opened { loaded: self.load(id).await?, claimed: None, voted: false, votes_after: None })
    }

    /// The vote under its guards (`rules::approval_guards`): an approval claims its slot and its person in the
    /// same conditional write, so of two members of one group approving at once one satisfies the group.
    async fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> Result<(), ApiError> {
        let write = vote_write(vote);
        let guards = match write.approves {
            Some((slot, email)) => rules::approval_guards(vote.sub, slot, email),
            None => vec![Guard::NotVoted { sub: vote.sub.to_owned() }],
        };
        let update = write.record(&guards);
        let detail = obj(json!({"verdict": vote.verdict.as_str()}));
        let event = self.event_put((id, vote.at, EventKind::Voted), &vote.actor(), &detail, None);
        self.transact_guarded(id, vec![self.tx_guarded(id, &update), event]).await.map(drop)
    }

    /// The claim: one conditional UpdateItem that takes the lease and records this attempt unless one that
    /// may have been delivered is on record (`if_not_exists(attempt, …)`); exactly one concurrent caller's
    /// condition holds.
    /// With `c.guards` (an approval that completes the quorum: `rules::completion_guards`) the claim also
    /// commits under them: its slot still free, its person uncounted, the approvals it completes on record.
    async fn claim(&self, id: &ApprovalId, c: &ClaimRequest<'_>) -> Result<Option<Attempt>, ApiError> {
        let attempt = json!({"id": c.claim_id, "verdict": c.verdict.as_str(), "sub": c.sub, "by": c.by, "at": c.now});
        let mut e = Expr::new("g");
        let guarded =
            if c.guards.is_empty() { String::new() } else { format!(" AND {}", guard::condition(&c.guards, &mut e)) };
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            merge(open_values(c.now, c.claim_id), json!({":until": c.until, ":attempt": attempt})),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :claimed, claimId = :cid, claimedUntil = :until, attempt = if_not_exists(attempt, :attempt)",
            "ConditionExpression": format!("({OPEN}){guarded}"),
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals, "ReturnValues": "ALL_NEW"});
        let mut answer = self.conditional("UpdateItem", body.clone()).await?;
        if answer.is_none() && !c.guards.is_empty() && self.upgrade(id).await? {
            answer = self.conditional("UpdateItem", body).await?;
        }
        let Some(answer) = answer else { return Ok(None) };
        let after = plain(id.as_str(), answer["Attributes"].as_object().unwrap_or(&Map::new()))?;
        let row: AttemptRow = columns(id.as_str(), "attempt", attempt_columns(&after))?;
        Attempt::try_from(row).map(Some).map_err(corrupt(id.as_str()))
    }

    async fn finish(&self, id: &ApprovalId, claim_id: &str, vote: &Vote<'_>) -> Result<(), ApiError> {
        let status = vote.verdict.final_status().as_str();
        let mut e = Expr::new("g");
        let sets = vote_write(vote).sets(true, &mut e).join(", ");
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            json!({":status": status, ":one": 1, ":at": vote.at, ":cid": claim_id}),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": format!("SET #st = :status, decision = :status, confirmed = :one, decidedAt = :at,
               {sets} REMOVE taskToken, claimId, claimedUntil, attempt"),
            "ConditionExpression": "claimId = :cid",
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals});
        let detail = obj(json!({"verdict": vote.verdict.as_str(), "status": status, "confirmed": true}));
        let event = self.event_put((id, vote.at, EventKind::Decided), &vote.actor(), &detail, None);
        self.transact_guarded(id, vec![self.tx_update(body), event]).await.map(drop)
    }

    async fn unconfirmed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        vote: Option<&Vote<'_>>,
    ) -> Result<(), ApiError> {
        // The recorded attempt's verdict decides the status: read it, then write conditional on the claim.
        let Some(current) = self.approval_item(id).await? else { return Ok(()) };
        let Some(attempt) = current.get("attempt").and_then(Value::as_object) else { return Ok(()) };
        let status = attempt_status(attempt.get("verdict").and_then(Value::as_str));
        let systems = attempt.get("sub").is_none_or(|s| s.is_null() || s == "");
        let mut set =
            "SET #st = :status, decision = :status, confirmed = :zero, decidedAt = :now, decidedOnExpiry = :sys"
                .to_owned();
        let mut e = Expr::new("g");
        if let Some(v) = vote {
            set.push_str(&format!(", {}", vote_write(v).sets(true, &mut e).join(", ")));
        }
        let (names, vals) = with_expr(
            json!({"#st": "status"}),
            json!({":status": status, ":zero": 0, ":now": now, ":sys": systems, ":cid": claim_id}),
            e,
        );
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": format!("{set} REMOVE taskToken, claimId, claimedUntil"),
            "ConditionExpression": "claimId = :cid AND attribute_exists(attempt)",
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals});
        let event =
            self.event_put((id, now, EventKind::Decided), &attempt_actor(attempt), &unconfirmed_detail(attempt), None);
        self.transact_guarded(id, vec![self.tx_update(body), event]).await.map(drop)
    }

    async fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> Result<(), ApiError> {
        let body = json!({"Key": key(id.as_str()),
            "UpdateExpression": "SET #st = :expired, decidedAt = :now REMOVE taskToken, claimId, claimedUntil, attempt",
            "ConditionExpression": "claimId = :cid",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": values(json!({":expired": ApprovalStatus::Expired.as_str(), ":now": now, ":cid": claim_id}))});
        let detail = obj(json!({"reason": "task_closed"}));
        let event = self.event_put((id, now, EventKind::Expired), &Actor::System, &detail, None);
        self.transact(vec![self.tx_update(body), event]).await.map(drop)
    }

    /// Back to pending. `not_sent`: no try of this claim can have reached Step Functions, so its own attempt
    /// record goes too (DynamoDB has no CASE: the write that also drops it is tried first, conditional on
    /// the attempt being this claim's).
    async fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> Result<(), ApiError> {
        if not_sent && self.conditional("UpdateItem", Self::release_body(id, claim_id, true)).await?.is_some() {
            return Ok(());
        }
        self.conditional("UpdateItem", Self::release_body(id, claim_id, false)).await.map(drop)
    }

    /// [`ApprovalStore::release`] with the `callback_failed` event (the error class, never the token) in the
    /// same transaction. Recorded whatever became of the claim, as on D1: if the claim is no longer this
    /// request's (its lease ran out and another took it), the event is put alone.
    async fn release_failed(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        not_sent: bool,
        failure: &CallbackFailure,
    ) -> Result<(), ApiError> {
        let detail = obj(json!({"verdict": failure.verdict.as_str(), "error": failure.class, "code": failure.code,
                                "maybeDelivered": !not_sent}));
        let event = self.event_put((id, failure.at, EventKind::CallbackFailed), &failure.actor, &detail, None);
        let tries: &[bool] = if not_sent { &[true, false] } else { &[false] };
        for &forget in tries {
            let update = self.tx_update(Self::release_body(id, claim_id, forget));
            if self.transact(vec![update, event.clone()]).await? {
                return Ok(());
            }
        }
        self.ok("PutItem", json!({"Item": event["Put"]["Item"]})).await.map(drop)
    }

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

    /// The table's TTL removes an approval's items after its task's deadline (`expiresAt`).
    async fn purge(&self, _before: i64, _rates_before: i64, _now: i64) -> Result<usize, ApiError> {
        Ok(0)
    }

    /// Each event item carries its retention's end as its TTL (`expiresAt`).
    async fn purge_events(&self, _before: i64) -> Result<usize, ApiError> {
        Ok(0)
    }

    /// Nothing to do: a lapsed lease is claimable as it is (the claim's condition takes `claimedUntil <= now`),
    /// and readers show a claim as pending.
    async fn release_stale_claims(&self, _now: i64) -> Result<usize, ApiError> {
        Ok(0)
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

impl DynamoStore {
    /// The out-of-office settings in effect at `now` of the people `listed` names (by sub, or by verified
    /// email), in one BatchGetItem.
    async fn absences(&self, listed: &[Principal], now: i64) -> Result<Vec<Absence>, ApiError> {
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
