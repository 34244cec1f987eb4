//! Items and expressions: the plain helpers every part of the DynamoDB backend shares.

use ringi_core::adapters::dynamo::{self as item, event_columns, DdbOutcome, KEY};
use ringi_core::adapters::guard_ddb::{Expr, VoteWrite};
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::audit::Actor;
use ringi_core::ApiError;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::platform::log;
use crate::store::port::decision::Vote;
use crate::store::port::rows::{self};

pub(super) type Item = Map<String, Value>;

pub(super) fn obj(v: Value) -> Item {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

/// A key attribute.
pub(super) fn key(k: &str) -> Value {
    json!({ KEY: {"S": k} })
}

/// Expression attribute values, from plain JSON.
pub(super) fn values(v: Value) -> Value {
    Value::Object(item::to_item(&obj(v)))
}

/// Typed reading of columns through the D1 row types; a value no domain value maps to is a 500.
pub(super) fn columns<T: DeserializeOwned>(id: &str, what: &'static str, v: Value) -> Result<T, ApiError> {
    serde_json::from_value(v).map_err(|e| {
        log("error", "corrupt_row", json!({"approvalId": id, "what": what, "error": e.to_string()}));
        ApiError::Internal
    })
}

pub(super) fn corrupt(id: &str) -> impl Fn(ringi_core::base::corrupt::CorruptValue) -> ApiError + '_ {
    rows::corrupt(id)
}

/// The approval ID of an approver index entry (`{id}#approver#…`), or of the seed's own item (its key).
pub(super) fn approval_of_index_entry(k: &str) -> &str {
    k.split_once("#approver#").map_or(k, |(id, _)| id)
}

/// Milliseconds to whole seconds, rounded up (the table's TTL attribute `expiresAt`).
pub(super) fn secs_ceil(ms: i64) -> i64 {
    ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)
}

/// The open-item condition shared by the claim and the cron: a token, not past expiry (ringi's `expiresAtMs`,
/// else the seed's `expiresAt` in seconds), and pending (the seed's items may have no status, or `PENDING`).
pub(super) const OPEN: &str = "attribute_exists(taskToken)
    AND (expiresAtMs > :now OR (attribute_not_exists(expiresAtMs) AND expiresAt > :now_s))
    AND (attribute_not_exists(#st) OR #st IN (:pending, :seed_pending) OR (#st = :claimed AND (claimedUntil <= :now OR claimId = :cid)))";

pub(super) fn open_values(now: i64, claim_id: &str) -> Value {
    json!({":now": now, ":now_s": now.div_euclid(1000), ":pending": "pending", ":seed_pending": "PENDING",
           ":claimed": "claimed", ":cid": claim_id})
}

pub(super) fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// A vote as the item's `votes` map keeps it (sub → this).
pub(super) fn vote_value(v: &Vote<'_>) -> Value {
    json!({"principal": v.principal.key(), "email": v.email, "username": v.username, "decision": v.verdict.as_str(),
           "comment": v.comment, "feedbackJson": v.feedback.map(|f| Value::Object(f.clone()).to_string()), "at": v.at})
}

/// How the item records `v`: its `votes` entry and, for an approval, the slot it satisfies and its person.
pub(super) fn vote_write<'a>(v: &'a Vote<'a>) -> VoteWrite<'a> {
    VoteWrite {
        sub: v.sub,
        value: vote_value(v),
        approves: (v.verdict == Verdict::Approve).then_some((&v.principal, v.email)),
    }
}

/// `base` (plain JSON placeholders of the hand-written part of a request) with the placeholders of `e` added.
pub(super) fn with_expr(names: Value, vals: Value, e: Expr) -> (Value, Value) {
    (merge(names, Value::Object(e.names)), merge(values(vals), Value::Object(e.values)))
}

/// The stored status of an attempt's verdict (D1's `ATTEMPT_STATUS`).
pub(super) fn attempt_status(verdict: Option<&str>) -> &'static str {
    if verdict == Some("reject") {
        ApprovalStatus::Rejected.as_str()
    } else {
        ApprovalStatus::Approved.as_str()
    }
}

/// Who made the attempt on record (its `sub` and `by`), as the event log names them: the system without a sub.
pub(super) fn attempt_actor(attempt: &Item) -> Actor {
    match attempt.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(sub) => Actor::User {
            sub: sub.to_owned(),
            display: attempt.get("by").and_then(Value::as_str).unwrap_or(sub).to_owned(),
        },
        None => Actor::System,
    }
}

/// The detail of a `decided` event of an attempt that may have been delivered (its verdict, unconfirmed).
pub(super) fn unconfirmed_detail(attempt: &Item) -> Item {
    obj(json!({"verdict": attempt.get("verdict").and_then(Value::as_str), "confirmed": false,
               "status": ApprovalStatus::DecidedUnconfirmed.as_str()}))
}

/// Expressions are written across lines here for reading; sent on one line (DynamoDB takes either, moto's
/// parser only one).
pub(super) fn one_line_expressions(v: &mut Value) {
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
pub(super) fn refused(op: &str, outcome: &DdbOutcome) -> ApiError {
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

pub(super) fn plain(k: &str, i: &Item) -> Result<Item, ApiError> {
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
pub(super) fn event_rows(answer: &Value) -> Result<Vec<Value>, ApiError> {
    let items = answer["Items"].as_array().into_iter().flatten().filter_map(Value::as_object);
    items.map(|i| event_row(&plain("event", i)?)).collect()
}

pub(super) fn event_row(i: &Item) -> Result<Value, ApiError> {
    let id = i.get(item::EVENT_OF).and_then(Value::as_str).unwrap_or("event");
    event_columns(i).map_err(corrupt(id))
}
