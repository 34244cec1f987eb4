//! The DynamoDB backend's platform-free half (`STORAGE=dynamodb`, design.md §7 "DynamoDB"): the
//! DynamoDB JSON attribute values, the item mapping (the seed design's token item `{approvalId,
//! approverUserId, taskToken, expiresAt}` read as is, ringi's own attributes optional), the approver index's
//! key, and what an answer of the DynamoDB JSON protocol means.

use serde_json::{json, Map, Value};

use crate::base::corrupt::CorruptValue;
use crate::base::principal::Principal;
use crate::domain::audit::{Actor, EventKind};
use crate::domain::audit_chain::{Head, Link};

/// `X-Amz-Target` prefix of the DynamoDB JSON protocol (`DynamoDB_20120810.GetItem` …).
pub const TARGET_PREFIX: &str = "DynamoDB_20120810.";
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// The table's hash key (the seed's).
pub const KEY: &str = "approvalId";
/// The approver index's hash key (the seed's `approverUserId`: a Cognito sub as is).
pub const INDEX_KEY: &str = "approverUserId";
/// What a seed item's `expiresAt` came with: the seed Lambda writes "now + 8 days" (its TTL), so an item
/// without `createdAt` is shown as created that long before it expires.
pub const SEED_TTL_MS: i64 = 8 * 86_400_000;

/// A plain JSON value as a DynamoDB attribute value (numbers as `N` strings, objects as `M`, arrays as `L`).
pub fn to_attr(v: &Value) -> Value {
    match v {
        Value::Null => json!({"NULL": true}),
        Value::Bool(b) => json!({ "BOOL": b }),
        Value::Number(n) => json!({"N": n.to_string()}),
        Value::String(s) => json!({ "S": s }),
        Value::Array(a) => json!({"L": a.iter().map(to_attr).collect::<Vec<_>>()}),
        Value::Object(o) => json!({"M": to_item(o)}),
    }
}

/// A plain JSON object as a DynamoDB item (or `M` map).
pub fn to_item(o: &Map<String, Value>) -> Map<String, Value> {
    o.iter().map(|(k, v)| (k.clone(), to_attr(v))).collect()
}

/// A DynamoDB attribute value as plain JSON: `N` becomes a number (an integer when it is one), sets become
/// arrays. `None` for a value of no known type.
pub fn from_attr(v: &Value) -> Option<Value> {
    let (ty, inner) = v.as_object()?.iter().next()?;
    Some(match ty.as_str() {
        "S" => inner.clone(),
        "N" => number(inner.as_str()?)?,
        "BOOL" => Value::Bool(inner.as_bool()?),
        "NULL" => Value::Null,
        "L" => Value::Array(inner.as_array()?.iter().map(from_attr).collect::<Option<_>>()?),
        "M" => Value::Object(from_item(inner.as_object()?)?),
        "SS" => inner.clone(),
        "NS" => Value::Array(inner.as_array()?.iter().map(|n| n.as_str().and_then(number)).collect::<Option<_>>()?),
        _ => return None,
    })
}

fn number(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    s.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
}

/// A DynamoDB item as a plain JSON object.
pub fn from_item(item: &Map<String, Value>) -> Option<Map<String, Value>> {
    item.iter().map(|(k, v)| from_attr(v).map(|v| (k.clone(), v))).collect()
}

/// The approver index's key of a principal: a sub as is (the seed's `approverUserId`), an email or group as
/// its principal key (`email:…`, `group:…`), so the three kinds never collide.
pub fn index_key(p: &Principal) -> String {
    match p {
        Principal::Sub(s) => s.clone(),
        other => other.key(),
    }
}

/// [`index_key`] read back.
pub fn principal_of_index_key(k: &str) -> Principal {
    match k.split_once(':') {
        Some(("email" | "group", _)) => Principal::from_key(k).unwrap_or_else(|| Principal::Sub(k.to_owned())),
        _ => Principal::Sub(k.to_owned()),
    }
}

/// The key of an approval's index entry for one approver: `{approvalId}#approver#{index key}` (an item of
/// its own, so an approval with several approvers is in each one's index range).
pub fn index_entry_key(approval_id: &str, p: &Principal) -> String {
    format!("{approval_id}#approver#{}", index_key(p))
}

/// The key of the item that keeps one task token to one approval (`token#{sha256}`).
pub fn token_key(token_sha256: &str) -> String {
    format!("token#{token_sha256}")
}

/// The key of one credential's registration count in one minute.
pub fn rate_key(credential: &str, window_start: i64) -> String {
    format!("rate#{credential}#{window_start}")
}

/// Web Push's items (design.md §9 "Push"): a device (`webpush::endpoint_hash`) with its subscription and owner.
pub fn push_device_key(device: &str) -> String {
    format!("push#device#{device}")
}

/// The devices a principal reaches (`push#to#sub:…`, `…email:…`, `…group:…`): a string set `devices`.
pub fn push_to_key(p: &Principal) -> String {
    format!("push#to#{}", p.normalized().key())
}

/// The outbox: a message (`kind`) of an approval to one device, not delivered yet.
pub const PUSH_OUTBOX: &str = "push#out#";

pub fn push_outbox_key(id: &str, device: &str, kind: &str) -> String {
    format!("{PUSH_OUTBOX}{id}#{device}#{kind}")
}

/// The key of one person's out-of-office item, by the principal approvals may name them with: their verified
/// sub (`ooo#sub:…`, the setting itself) and, when they gave a verified email, a copy under it
/// (`ooo#email:…`), so that registration reads every listed person's absence in one BatchGetItem.
pub fn absence_key(p: &Principal) -> String {
    format!("ooo#{}", p.normalized().key())
}

/// The principal an out-of-office item is keyed by ([`absence_key`] read back).
pub fn absent_person(key: &str) -> Option<Principal> {
    key.strip_prefix("ooo#").and_then(Principal::from_key)
}

/// The expiry of an item in milliseconds: ringi's `expiresAtMs`, else the seed's `expiresAt` (epoch seconds,
/// the table's TTL attribute).
pub fn expires_at_ms(item: &Map<String, Value>) -> Option<i64> {
    item.get("expiresAtMs")
        .and_then(Value::as_i64)
        .or_else(|| item.get("expiresAt").and_then(Value::as_i64).map(|s| s * 1000))
}

fn str_or<'a>(item: &'a Map<String, Value>, k: &str, default: &'a str) -> &'a str {
    item.get(k).and_then(Value::as_str).unwrap_or(default)
}

fn num_or(item: &Map<String, Value>, k: &str, default: f64) -> f64 {
    item.get(k).and_then(Value::as_f64).unwrap_or(default)
}

fn bool_num(item: &Map<String, Value>, k: &str) -> f64 {
    match item.get(k) {
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(v) => v.as_f64().unwrap_or(0.0),
        None => 0.0,
    }
}

/// The listed approvers of a (plain) item: ringi's `approvers` (principal keys), else the seed's single
/// `approverUserId` (a sub).
pub fn approvers(item: &Map<String, Value>) -> Result<Vec<Principal>, CorruptValue> {
    if let Some(list) = item.get("approvers").and_then(Value::as_array) {
        return list
            .iter()
            .map(|k| k.as_str().and_then(Principal::from_key).ok_or_else(|| CorruptValue::new("approvers", k)))
            .collect();
    }
    match item.get(INDEX_KEY).and_then(Value::as_str) {
        Some(sub) => Ok(vec![principal_of_index_key(sub)]),
        None => Err(CorruptValue::new("approvers", "neither approvers nor approverUserId")),
    }
}

/// A (plain) approval item as the columns of a stored approval (the names of D1's `approvals` row, so the
/// one typed reading serves both backends). Every ringi attribute is optional; a seed item is a pending
/// approval for one approver, quorum `any`, titled by its ID.
pub fn approval_columns(item: &Map<String, Value>) -> Result<Value, CorruptValue> {
    let id = item.get(KEY).and_then(Value::as_str).ok_or_else(|| CorruptValue::new(KEY, "missing"))?;
    let expires_at = expires_at_ms(item).ok_or_else(|| CorruptValue::new("expiresAt", "missing"))?;
    let attempt = item.get("attempt").and_then(Value::as_object);
    let attempt_str = |k: &str| attempt.and_then(|a| a.get(k)).and_then(Value::as_str).map(str::to_owned);
    let approver_count = match item.get("approverCount").and_then(Value::as_f64) {
        Some(n) => n,
        None => approvers(item)?.len() as f64,
    };
    Ok(json!({
        "id": id,
        "task_token": item.get("taskToken").and_then(Value::as_str),
        // The seed's Step Functions example writes `status: "PENDING"`.
        "status": str_or(item, "status", "pending").to_ascii_lowercase(),
        "confirmed": num_or(item, "confirmed", 1.0),
        "title": item.get("title").and_then(Value::as_str).map_or_else(|| format!("Approval {id}"), str::to_owned),
        "summary": str_or(item, "summary", ""),
        "details_json": str_or(item, "detailsJson", "{}"),
        "form_json": str_or(item, "formJson", "[]"),
        "quorum": str_or(item, "quorum", "any"),
        "approver_count": approver_count,
        "context_json": str_or(item, "contextJson", "{}"),
        "locale": item.get("locale").and_then(Value::as_str),
        "created_at": num_or(item, "createdAt", (expires_at - SEED_TTL_MS) as f64),
        "expires_at": expires_at as f64,
        "claimed_until": item.get("claimedUntil").and_then(Value::as_f64),
        "decided_at": item.get("decidedAt").and_then(Value::as_f64),
        "attempt_sub": attempt_str("sub"),
        "attempt_by": attempt_str("by"),
        "registered_by": item.get("registeredBy").and_then(Value::as_str),
        "requested_by_json": str_or(item, "requestedByJson", "[]"),
        "allow_self_approval": bool_num(item, "allowSelfApproval"),
        "on_expiry": str_or(item, "onExpiry", "none"),
        "decided_on_expiry": bool_num(item, "decidedOnExpiry"),
        "aws_account": item.get("awsAccount").and_then(Value::as_str),
        "aws_region": item.get("awsRegion").and_then(Value::as_str),
        "request_sha256": item.get("requestSha256").and_then(Value::as_str),
        "require_sign_in_json": item.get("requireSignInJson").and_then(Value::as_str),
    }))
}

/// The recorded votes of a (plain) item (`votes`: sub → vote) as the columns of D1's `decisions` rows,
/// in D1's order (time, then sub).
pub fn decision_columns(item: &Map<String, Value>) -> Vec<Value> {
    let Some(votes) = item.get("votes").and_then(Value::as_object) else { return Vec::new() };
    let mut rows: Vec<Value> = votes
        .iter()
        .map(|(sub, v)| {
            let f = |k: &str| v.get(k).cloned().unwrap_or(Value::Null);
            json!({"sub": sub, "principal": f("principal"), "email": f("email"), "username": f("username"),
                   "decision": f("decision"), "comment": f("comment"), "feedback_json": f("feedbackJson"),
                   "at": v.get("at").and_then(Value::as_f64).unwrap_or(0.0)})
        })
        .collect();
    rows.sort_by(|a, b| {
        let key = |r: &Value| (r["at"].as_f64().unwrap_or(0.0) as i64, r["sub"].as_str().unwrap_or("").to_owned());
        key(a).cmp(&key(b))
    });
    rows
}

/// The attempt on record of a (plain) item, as D1's claim returns it.
pub fn attempt_columns(item: &Map<String, Value>) -> Value {
    let a = item.get("attempt").and_then(Value::as_object);
    let f = |k: &str| a.and_then(|a| a.get(k)).cloned().unwrap_or(Value::Null);
    json!({"attempt_id": f("id"), "attempt_verdict": f("verdict"), "attempt_sub": f("sub")})
}

/// The audit trail's items (design.md §10): one item per event under `event#{dedupe key}` (the dedupe key D1
/// keeps unique: `{approvalId}:{once key}` or `{approvalId}:r:{random}`), so a retried write of the same event
/// lands on the same key. Two indexes read them: [`EVENTS_BY_APPROVAL`] (hash [`EVENT_OF`], the approval's
/// timeline) and [`EVENTS_BY_MONTH`] (hash [`EVENT_MONTH`], the operators' export by time range), both sorted
/// by [`EVENT_SORT`] = `{at:013}#{seq:016}`; `expiresAt` (the table's TTL) is the audit retention's.
pub const EVENTS_BY_APPROVAL: &str = "eventsByApproval";
pub const EVENTS_BY_MONTH: &str = "eventsByMonth";
/// The approval an event item belongs to (its items outlive the approval's).
pub const EVENT_OF: &str = "eventOf";
/// The UTC month of the event (`2026-12`): the export's partitions, a bounded number per range.
pub const EVENT_MONTH: &str = "eventMonth";
/// The order of events within either index: time, then [`event_seq`].
pub const EVENT_SORT: &str = "eventSort";

/// The item key of an event.
pub fn event_key(dedupe_key: &str) -> String {
    format!("event#{dedupe_key}")
}

/// The tie-breaker between events of the same millisecond (D1's `seq`, which this table has no counter for):
/// 52 bits of the dedupe key's SHA-256, so a retried write carries the same one and the export's cursor
/// `(at, seq)` works unchanged.
pub fn event_seq(dedupe_key: &str) -> i64 {
    i64::from_str_radix(&crate::base::hex::hex_sha256(dedupe_key.as_bytes())[..13], 16).unwrap_or(0)
}

/// Above every [`event_seq`]: the end of a millisecond in [`EVENT_SORT`] order.
pub const EVENT_SEQ_END: i64 = 1 << 52;

/// [`EVENT_SORT`] of the position `(at, seq)`: fixed-width, so string order is time order.
pub fn event_sort(at: i64, seq: i64) -> String {
    format!("{:013}#{:016}", at.max(0), seq.max(0))
}

/// [`EVENT_MONTH`] of a time.
pub fn event_month(at: i64) -> String {
    crate::base::time::format_rfc3339(at)[..7].to_owned()
}

/// The months `[from, to)` touches, oldest first (the partitions one export range reads).
pub fn event_months(from: i64, to: i64) -> Vec<String> {
    let ym = |at: i64| {
        let m = event_month(at);
        (m[..4].parse::<i32>().unwrap_or(1970), m[5..].parse::<i32>().unwrap_or(1))
    };
    let (mut at, last) = (ym(from), ym(to.max(from + 1) - 1));
    let mut out = Vec::new();
    while at <= last {
        out.push(format!("{:04}-{:02}", at.0, at.1));
        at = if at.1 == 12 { (at.0 + 1, 1) } else { (at.0, at.1 + 1) };
    }
    out
}

/// One event as it is written.
pub struct NewEvent<'a> {
    pub approval_id: &'a str,
    pub at: i64,
    pub kind: EventKind,
    pub actor: &'a Actor,
    pub detail: &'a Map<String, Value>,
    pub dedupe_key: &'a str,
}

/// The DynamoDB item of an event; it expires (TTL, epoch seconds) `retention_ms` after the event.
pub fn event_item(e: &NewEvent<'_>, retention_ms: i64) -> Map<String, Value> {
    let seq = event_seq(e.dedupe_key);
    let mut plain = json!({
        KEY: event_key(e.dedupe_key), EVENT_OF: e.approval_id, EVENT_MONTH: event_month(e.at),
        EVENT_SORT: event_sort(e.at, seq), "at": e.at, "seq": seq, "kind": e.kind.as_str(), "actor": e.actor.key(),
        "detailJson": Value::Object(e.detail.clone()).to_string(),
        "expiresAt": (e.at + retention_ms).div_euclid(1000) + 1, CHAIN_PENDING: 1,
    });
    if let Some(d) = e.actor.display() {
        plain["actorDisplay"] = Value::from(d);
    }
    to_item(plain.as_object().expect("an object"))
}

/// A (plain) event item as the columns of D1's `approval_events` row (one typed reading for both backends).
pub fn event_columns(item: &Map<String, Value>) -> Result<Value, CorruptValue> {
    let text = |k: &'static str| item.get(k).and_then(Value::as_str).ok_or_else(|| CorruptValue::new(k, "missing"));
    let num = |k: &'static str| item.get(k).and_then(Value::as_f64).ok_or_else(|| CorruptValue::new(k, "missing"));
    Ok(json!({
        "seq": num("seq")?, "approval_id": text(EVENT_OF)?, "at": num("at")?, "kind": text("kind")?,
        "actor": text("actor")?, "actor_display": item.get("actorDisplay").and_then(Value::as_str),
        "detail_json": text("detailJson")?, "chain_n": item.get("chainN"), "prev_digest": item.get("prevDigest"),
        "digest": item.get("digest"),
    }))
}

/// On an event item written but not sealed into its approval's hash chain yet (`domain::audit_chain`); items
/// written before the chain existed lack it and are never sealed (they read as unchained).
pub const CHAIN_PENDING: &str = "chainPending";

/// The item that holds where the hash chain of approval `approval_id` ends (`chainN`, `digest`); it lives as
/// long as the events it follows (`expiresAt`, moved on with each seal).
pub fn chain_key(approval_id: &str) -> String {
    format!("chain#{approval_id}")
}

/// The head a [`chain_key`] item holds.
pub fn chain_head(item: &Map<String, Value>) -> Option<Head> {
    let n = item.get("chainN").and_then(Value::as_i64)?;
    let digest = item.get("digest").and_then(Value::as_str)?;
    Some(Head { n, digest: digest.to_owned() })
}

/// The UpdateItem bodies (without `TableName`) of one seal of approval `approval_id`'s events (item key, link):
/// each event's link, only while it is still unsealed, and the head moved on from `read` to the last link, only
/// while it is still `read` (absent: the chain had not begun) — in one transaction, so a seal that lost a race
/// to another writes nothing and reads the head again.
pub fn seal_updates(approval_id: &str, read: Option<&Head>, links: &[(String, Link)], expires_at: i64) -> Vec<Value> {
    let Some((_, last)) = links.last() else { return Vec::new() };
    let mut head = json!({"Key": {KEY: {"S": chain_key(approval_id)}},
        "UpdateExpression": "SET chainN = :n, digest = :d, expiresAt = :x",
        "ExpressionAttributeValues": {":n": {"N": last.n.to_string()}, ":d": {"S": last.digest},
            ":x": {"N": expires_at.to_string()}}});
    match read {
        None => head["ConditionExpression"] = Value::from("attribute_not_exists(chainN)"),
        Some(h) => {
            head["ConditionExpression"] = Value::from("chainN = :read");
            head["ExpressionAttributeValues"][":read"] = json!({"N": h.n.to_string()});
        }
    }
    let mut out = vec![head];
    out.extend(links.iter().map(|(k, l)| {
        json!({"Key": {KEY: {"S": k}},
            "UpdateExpression": "SET chainN = :n, prevDigest = :p, digest = :d REMOVE chainPending",
            "ConditionExpression": "attribute_exists(chainPending)",
            "ExpressionAttributeValues": {":n": {"N": l.n.to_string()}, ":p": {"S": l.prev_digest}, ":d": {"S": l.digest}}})
    }));
    out
}

/// What DynamoDB answered, as far as the worker acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdbOutcome {
    Ok(Value),
    /// A `ConditionExpression` did not hold: nothing was written.
    ConditionFailed,
    /// A transaction was cancelled; each item's reason code (`None`, `ConditionalCheckFailed`, …).
    Cancelled(Vec<String>),
    /// Throttling, a 5xx, an internal error: worth another try (every write is conditional or keyed).
    Transient(String),
    /// Anything else (validation, access denied, unknown table): a configuration error or a bug.
    Permanent(String),
}

/// Reads one answer of the DynamoDB JSON protocol: a 200 with its body, or the error's `__type`
/// (`com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException`) — never its message, which may
/// quote key values.
pub fn classify(status: u16, body: &str) -> DdbOutcome {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    if status == 200 {
        return DdbOutcome::Ok(parsed);
    }
    let ty = parsed.get("__type").and_then(Value::as_str).unwrap_or("");
    let ty = ty.rsplit('#').next().unwrap_or(ty).to_owned();
    match ty.as_str() {
        "ConditionalCheckFailedException" => DdbOutcome::ConditionFailed,
        "TransactionCanceledException" => {
            let reasons = parsed.get("CancellationReasons").and_then(Value::as_array);
            let codes = reasons.map(|r| r.iter().map(|c| c["Code"].as_str().unwrap_or("None").to_owned()).collect());
            // moto and some SDK paths name the reasons only in the message: "[ConditionalCheckFailed, None]".
            let codes: Vec<String> =
                codes.unwrap_or_else(|| reasons_from_message(parsed.get("message").or(parsed.get("Message"))));
            // A transaction that met another one on an item, or was throttled, is worth another try.
            match codes.iter().find(|c| {
                matches!(c.as_str(), "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded")
            }) {
                Some(c) => DdbOutcome::Transient(c.clone()),
                None => DdbOutcome::Cancelled(codes),
            }
        }
        "ProvisionedThroughputExceededException"
        | "ThrottlingException"
        | "RequestLimitExceeded"
        | "InternalServerError"
        | "ServiceUnavailable"
        | "TransactionConflictException" => DdbOutcome::Transient(ty),
        _ if status >= 500 || status == 0 => {
            DdbOutcome::Transient(if ty.is_empty() { format!("HTTP {status}") } else { ty })
        }
        _ => DdbOutcome::Permanent(if ty.is_empty() { format!("HTTP {status}") } else { ty }),
    }
}

fn reasons_from_message(m: Option<&Value>) -> Vec<String> {
    let m = m.and_then(Value::as_str).unwrap_or("");
    let inner = m.split_once('[').and_then(|(_, r)| r.split_once(']')).map_or("", |(l, _)| l);
    inner.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn attribute_values_round_trip() {
        let v = json!({"s": "x", "n": 3, "f": 1.5, "b": true, "z": null, "l": ["a", 2], "m": {"k": "v"}});
        let item = to_item(v.as_object().unwrap());
        assert_eq!(item["n"], json!({"N": "3"}));
        assert_eq!(item["m"], json!({"M": {"k": {"S": "v"}}}));
        assert_eq!(Value::Object(from_item(&item).unwrap()), v);
        assert_eq!(from_attr(&json!({"B": "AAE="})), None, "binary is not an approval attribute");
    }

    #[test]
    fn a_seed_item_reads_as_a_pending_approval_for_its_approver() {
        // What the seed's save-token Lambda (or `putItem.waitForTaskToken`) writes, nothing more.
        let item = plain(json!({"approvalId": "abcdefgh12345678", "approverUserId": "user-1",
                                "taskToken": "tok", "expiresAt": 1_900_000_000}));
        let row = approval_columns(&item).unwrap();
        assert_eq!(row["status"], "pending");
        assert_eq!(row["quorum"], "any");
        assert_eq!(row["approver_count"], 1.0);
        assert_eq!(row["expires_at"], 1_900_000_000_000.0);
        assert_eq!(row["title"], "Approval abcdefgh12345678");
        assert_eq!(row["created_at"], (1_900_000_000_000 - SEED_TTL_MS) as f64);
        assert_eq!(approvers(&item).unwrap(), vec![Principal::Sub("user-1".into())]);
        assert_eq!(decision_columns(&item), Vec::<Value>::new());
        // The seed's Step Functions example writes its status in capitals.
        let upper = plain(json!({"approvalId": "x", "approverUserId": "u", "expiresAt": 1, "status": "PENDING"}));
        assert_eq!(approval_columns(&upper).unwrap()["status"], "pending");
        let none = plain(json!({"approvalId": "x", "expiresAt": 1}));
        assert!(approvers(&none).is_err());
        assert!(approval_columns(&plain(json!({"approvalId": "x"}))).is_err(), "no expiry: corrupt, not a default");
    }

    #[test]
    fn ringi_attributes_win_over_the_seed_defaults() {
        let item = plain(json!({"approvalId": "a", "expiresAt": 2, "expiresAtMs": 2_500, "createdAt": 1_000,
            "approvers": ["sub:alice", "group:ops"], "quorum": "all", "title": "Deploy",
            "attempt": {"id": "c1", "verdict": "approve", "sub": "alice", "by": "alice@example.com"},
            "votes": {"bob": {"principal": "group:ops", "decision": "approve", "at": 9},
                      "alice": {"principal": "sub:alice", "decision": "approve", "at": 5}}}));
        let row = approval_columns(&item).unwrap();
        assert_eq!((row["expires_at"].as_f64(), row["created_at"].as_f64()), (Some(2_500.0), Some(1_000.0)));
        assert_eq!((row["title"].as_str(), row["approver_count"].as_f64()), (Some("Deploy"), Some(2.0)));
        assert_eq!(row["attempt_by"], "alice@example.com");
        let votes = decision_columns(&item);
        assert_eq!(votes.iter().map(|v| v["sub"].as_str().unwrap()).collect::<Vec<_>>(), ["alice", "bob"]);
        assert_eq!(attempt_columns(&item)["attempt_id"], "c1");
        assert_eq!(attempt_columns(&plain(json!({})))["attempt_id"], Value::Null);
    }

    #[test]
    fn index_keys_keep_a_sub_as_the_seed_writes_it() {
        let sub = Principal::Sub("u-1".into());
        let email = Principal::Email("a@example.com".into());
        assert_eq!(index_key(&sub), "u-1");
        assert_eq!(index_key(&email), "email:a@example.com");
        for p in [sub, email, Principal::Group("ops".into())] {
            assert_eq!(principal_of_index_key(&index_key(&p)), p);
        }
        assert_eq!(index_entry_key("id1", &Principal::Group("ops".into())), "id1#approver#group:ops");
        let email = Principal::Email("Dave@Example.com".into());
        assert_eq!(absence_key(&email), "ooo#email:dave@example.com");
        assert_eq!(absent_person(&absence_key(&email)), Some(email.normalized()));
        assert_eq!(absent_person("token#x"), None);
    }

    #[test]
    fn answers_are_classified_by_type_only() {
        assert_eq!(classify(200, r#"{"Item":{}}"#), DdbOutcome::Ok(json!({"Item": {}})));
        let ccf = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"x"}"#;
        assert_eq!(classify(400, ccf), DdbOutcome::ConditionFailed);
        let tx = r#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                     "CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed"}]}"#;
        assert_eq!(classify(400, tx), DdbOutcome::Cancelled(vec!["None".into(), "ConditionalCheckFailed".into()]));
        let moto = r#"{"__type":"TransactionCanceledException","message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"}"#;
        assert_eq!(classify(400, moto), DdbOutcome::Cancelled(vec!["None".into(), "ConditionalCheckFailed".into()]));
        let conflict = r#"{"__type":"TransactionCanceledException","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}"#;
        assert_eq!(classify(400, conflict), DdbOutcome::Transient("TransactionConflict".into()));
        let throttled = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}"#;
        assert!(matches!(classify(400, throttled), DdbOutcome::Transient(_)));
        assert!(matches!(classify(503, ""), DdbOutcome::Transient(_)));
        let denied = r#"{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"User arn:… key abc"}"#;
        assert_eq!(classify(400, denied), DdbOutcome::Permanent("AccessDeniedException".into()));
    }

    #[test]
    fn events_are_items_of_their_own_that_read_back_as_d1_rows() {
        let actor = Actor::User { sub: "u-1".into(), display: "a@example.com".into() };
        let detail = json!({"verdict": "approve"});
        let at = 1_764_590_400_123; // 2025-12-01T12:00:00.123Z
        let e = NewEvent {
            approval_id: "abcdefgh12345678",
            at,
            kind: EventKind::Decided,
            actor: &actor,
            detail: detail.as_object().unwrap(),
            dedupe_key: "abcdefgh12345678:decided",
        };
        let item = event_item(&e, 30 * 86_400_000);
        assert_eq!(item[KEY], json!({"S": "event#abcdefgh12345678:decided"}));
        assert_eq!(item[EVENT_OF], json!({"S": "abcdefgh12345678"}));
        assert_eq!(item[EVENT_MONTH], json!({"S": "2025-12"}));
        let seq = event_seq("abcdefgh12345678:decided");
        assert!((0..1 << 52).contains(&seq));
        assert_eq!(item[EVENT_SORT]["S"], format!("1764590400123#{seq:016}"));
        assert_eq!(item["expiresAt"], json!({"N": ((at + 30 * 86_400_000) / 1000 + 1).to_string()}));
        assert!(!item.contains_key("taskToken"), "never one of the cron's open items");
        let row = event_columns(&from_item(&item).unwrap()).unwrap();
        assert_eq!(
            row,
            json!({"seq": seq as f64, "approval_id": "abcdefgh12345678", "at": at as f64, "kind": "decided",
            "actor": "user:u-1", "actor_display": "a@example.com", "detail_json": r#"{"verdict":"approve"}"#,
            "chain_n": null, "prev_digest": null, "digest": null})
        );
        // The same event written again is the same item; another event of the same millisecond sorts apart.
        assert_eq!(event_item(&e, 30 * 86_400_000), item);
        assert_ne!(event_seq("abcdefgh12345678:r:x"), seq);
        let system = NewEvent { actor: &Actor::System, ..e };
        let item = from_item(&event_item(&system, 1)).unwrap();
        assert_eq!((item.get("actorDisplay"), event_columns(&item).unwrap()["actor"].as_str()), (None, Some("system")));
        assert!(event_columns(&plain(json!({"approvalId": "event#x", "seq": 1}))).is_err(), "corrupt, not a default");
    }

    #[test]
    fn sort_keys_order_by_time_then_seq_and_months_cover_a_range() {
        assert!(event_sort(999, 5) < event_sort(1_000, 0));
        assert!(event_sort(1_000, 5) < event_sort(1_000, 40));
        let t = |s: &str| crate::base::time::parse_rfc3339("t", s).unwrap();
        assert_eq!(
            event_months(t("2025-11-30T00:00:00Z"), t("2026-02-01T00:00:00Z")),
            ["2025-11", "2025-12", "2026-01"]
        );
        assert_eq!(event_months(t("2026-01-05T00:00:00Z"), t("2026-01-05T00:00:01Z")), ["2026-01"]);
        assert_eq!(event_month(t("2026-12-31T23:59:59.999Z")), "2026-12");
    }
}
