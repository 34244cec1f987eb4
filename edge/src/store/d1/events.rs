//! The append-only event log (`approval_events`, core::audit). Events are written as statements inside the
//! batch that makes the change they record, so that a change and its event land together or not at all.
//!
//! Every insert carries a `dedupe_key` (unique): a retried batch whose first answer was lost runs the very
//! same statements again, and `INSERT OR IGNORE` on that key records the event once. Events that happen once
//! per approval (or per approver) use a deterministic key ([`event_once_stmt`]).

use ringi_core::api::audit_export::AuditQuery;
use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::domain::audit_chain::{seal_in_order, Head};
use ringi_core::sql::chain;
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::JsValue;

use super::{n, opt, s, D1Store, Stmt};
use crate::store::port::records::{events, random_key, EventPage, EventRow, EVENT_COLUMNS, TIMELINE_MAX};

/// Every event insert: `dedupe_key` is unique, so a statement run again (a retried batch) records nothing twice.
pub(super) use ringi_core::sql::EVENT_INSERT as INSERT;

pub(super) fn args(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
    key: &str,
) -> Vec<JsValue> {
    vec![
        s(id.as_str()),
        n(at),
        s(kind.as_str()),
        s(&actor.key()),
        opt(actor.display()),
        s(&Value::Object(detail.clone()).to_string()),
        s(key),
    ]
}

/// The INSERT of one event, to put into the batch of the change it records.
pub(crate) fn event_stmt(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
) -> Stmt {
    let key = random_key(id);
    Stmt::new(format!("{INSERT} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"), args(id, at, kind, actor, detail, &key))
}

/// The key of an event that happens once per registration: the approval's ID and its registration time go in
/// front of `?7`, so that an ID chosen again after the approval was purged starts a timeline of its own.
const REGISTRATION_KEY: &str =
    "?1 || ':' || COALESCE((SELECT created_at FROM approvals WHERE id = ?1), 0) || ':' || ?7";

/// When an event is recorded: at most once per registration under `key` (e.g. `viewed:<sub>`, `decided`; see
/// [`REGISTRATION_KEY`]), and only if `when` holds — an SQL condition whose parameters are `args`, numbered from `?8` on.
pub(crate) struct Once<'a> {
    pub key: &'a str,
    pub when: &'a str,
    pub args: Vec<JsValue>,
}

/// The INSERT of an event that happens once (see [`Once`]).
pub(crate) fn event_once_stmt(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
    once: Once<'_>,
) -> Stmt {
    let mut all = args(id, at, kind, actor, detail, once.key);
    all.extend(once.args);
    Stmt::new(format!("{INSERT} SELECT ?1, ?2, ?3, ?4, ?5, ?6, {REGISTRATION_KEY} WHERE {}", once.when), all)
}

/// An approval's events, oldest first (the approval page's timeline).
pub(crate) fn timeline_stmt(id: &ApprovalId) -> Stmt {
    Stmt::new(
        // This registration's events only: an ID chosen again after a purge does not show the old approval's.
        format!(
            "SELECT {EVENT_COLUMNS} FROM approval_events WHERE approval_id = ?1
               AND at >= COALESCE((SELECT created_at FROM approvals WHERE id = ?1), 0) ORDER BY seq LIMIT {TIMELINE_MAX}"
        ),
        vec![s(id.as_str())],
    )
}

/// An unsealed event with the head of its approval's chain (`ringi_core::sql::chain::pending`).
#[derive(Deserialize)]
struct PendingRow {
    #[serde(flatten)]
    event: EventRow,
    head_n: Option<f64>,
    head_digest: Option<String>,
}

impl D1Store {
    /// Seals the unsealed events into their approvals' hash chains, in the order they were written
    /// (`ringi_core::domain::audit_chain`): one read, one batch of conditional UPDATEs, a bounded number at a
    /// time. A seal that lost a race to another changes nothing. How many events this call sealed.
    pub async fn seal_events(&self) -> Result<usize, ApiError> {
        let rows: Vec<PendingRow> = self.rows(chain::pending().into(), "chain_pending").await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let mut pending = Vec::with_capacity(rows.len());
        for r in rows {
            let head = match (r.head_n, r.head_digest) {
                (Some(n), Some(digest)) => Some(Head { n: n as i64, digest }),
                _ => None,
            };
            let seq = r.event.seq as i64;
            let event = events(vec![r.event])?.remove(0);
            pending.push(((seq, event.approval_id.clone()), event, head));
        }
        let stmts: Vec<Stmt> =
            seal_in_order(&pending).iter().map(|((seq, id), link)| chain::seal(*seq, id, link).into()).collect();
        let results = self.batch_only(&stmts, "chain_seal").await?;
        Ok((0..stmts.len()).map(|i| super::changed(results.get(i))).sum())
    }

    /// Events with `from <= at < to` after the cursor, in `(at, seq)` order (the `approval_events_at` index).
    pub async fn audit_page(&self, q: &AuditQuery) -> Result<EventPage, ApiError> {
        let (c_at, c_seq) = q.cursor.map_or((q.from - 1, 0), |c| (c.at, c.seq));
        let stmt = Stmt::new(
            format!(
                "SELECT {EVENT_COLUMNS} FROM approval_events
                 WHERE at >= ?1 AND at < ?2 AND (at > ?3 OR (at = ?3 AND seq > ?4))
                 ORDER BY at, seq LIMIT ?5"
            ),
            vec![n(q.from), n(q.to), n(c_at), n(c_seq), n(q.limit as i64 + 1)],
        );
        let mut rows: Vec<EventRow> = self.rows(stmt, "audit_page").await?;
        let more = rows.len() > q.limit;
        rows.truncate(q.limit);
        let last = rows.last().filter(|_| more).map(|r| (r.at as i64, r.seq as i64));
        Ok(EventPage { events: events(rows)?, last })
    }

    /// The audit retention: deletes events that happened before `before`, a bounded batch per run (a backlog
    /// drains over runs). Independent of the approvals' purge: events outlive their approval.
    pub async fn purge_events(&self, before: i64) -> Result<usize, ApiError> {
        let stmt = ringi_core::sql::upkeep::purge_events(before).into();
        self.changes(stmt, "purge_events").await
    }
}

/// `decided` events, unconfirmed, of the approvals `where_sql` selects (over `approvals`, parameters from
/// `?1` in `args`) that carry a recorded callback attempt: its verdict, by its sender, at `at_sql`. Once per
/// approval.
pub(crate) fn attempt_decided_stmt(at_sql: &str, where_sql: &str, args: Vec<JsValue>) -> Stmt {
    Stmt::new(
        format!(
            "{INSERT} SELECT id, {at_sql}, '{kind}',
               CASE WHEN attempt_sub IS NULL THEN 'system' ELSE 'user:' || attempt_sub END,
               CASE WHEN attempt_sub IS NULL THEN NULL ELSE attempt_by END,
               json_object('verdict', attempt_verdict, 'status', '{status}', 'confirmed', json('false')),
               id || ':decided'
             FROM approvals WHERE attempt_verdict IS NOT NULL AND ({where_sql})",
            kind = EventKind::Decided.as_str(),
            status = ringi_core::base::status::ApprovalStatus::DecidedUnconfirmed.as_str(),
        ),
        args,
    )
}

/// `expired` events (by the deadline) of the approvals `where_sql` selects that carry no callback attempt.
pub(crate) fn deadline_expired_stmt(where_sql: &str, args: Vec<JsValue>) -> Stmt {
    Stmt::new(
        format!(
            "{INSERT} SELECT id, expires_at, '{kind}', 'system', NULL, '{{\"reason\":\"deadline\"}}', id || ':expired'
             FROM approvals WHERE attempt_verdict IS NULL AND ({where_sql})",
            kind = EventKind::Expired.as_str(),
        ),
        args,
    )
}

/// `purged` events of the approvals `where_sql` selects (their rows are deleted in the same batch).
pub(crate) fn purged_stmt(where_sql: &str, mut args: Vec<JsValue>, now: i64) -> Stmt {
    let at = args.len() + 1;
    args.push(n(now));
    Stmt::new(
        format!(
            "{INSERT} SELECT id, ?{at}, '{kind}', 'system', NULL, '{{}}', id || ':purged' FROM approvals WHERE {where_sql}",
            kind = EventKind::Purged.as_str(),
        ),
        args,
    )
}

/// The event of a change made under `guards` (`ringi_core::domain::rules`), written first in its batch and only while
/// every guard holds; the change's own statements then run only if this event is on record
/// ([`recorded_sql`] with the returned key). So the guards are checked once, before any write of the batch
/// could affect them, and a retried batch (same key) neither records the event twice nor half-applies.
pub(crate) fn guarded_event_stmt(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
    guards: &[ringi_core::domain::rules::Guard],
) -> (Stmt, String) {
    let key = random_key(id);
    let guard = ringi_core::sql::guards_sql(id.as_str(), guards, 8);
    let mut all = args(id, at, kind, actor, detail, &key);
    all.extend(guard.args.iter().map(super::arg));
    (Stmt::new(format!("{INSERT} SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE {}", guard.sql), all), key)
}

/// The event with key `param`'s value is on record (see [`guarded_event_stmt`]).
pub(crate) fn recorded_sql(param: &str) -> String {
    format!("EXISTS (SELECT 1 FROM approval_events recorded WHERE recorded.dedupe_key = {param})")
}

/// [`event_stmt`] for a change whose statement in the same batch may change nothing (a race lost, a second cron
/// run, a retry of a batch that went through): written only when `cond` holds — SQL over ?1 = the approval id,
/// e.g. `changes() > 0` right after that statement. Its key is drawn once per statement, so a retried batch
/// records it once.
pub(crate) fn event_stmt_if(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
    cond: &str,
) -> Stmt {
    let key = random_key(id);
    Stmt::new(
        format!("{INSERT} SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE {cond}"),
        args(id, at, kind, actor, detail, &key),
    )
}
