//! The append-only event log (`approval_events`, core::audit). Events are written as statements inside the
//! batch that makes the change they record, so that a change and its event land together or not at all.
//!
//! Every insert carries a `dedupe_key` (unique): a retried batch whose first answer was lost runs the very
//! same statements again, and `INSERT OR IGNORE` on that key records the event once. Events that happen once
//! per approval (or per approver) use a deterministic key ([`event_once_stmt`]).

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::api::audit_export::AuditQuery;
use ringi_core::base::corrupt::CorruptValue;
use ringi_core::base::time::format_rfc3339;
use ringi_core::domain::audit::{Actor, Event, EventKind};
use ringi_core::domain::schedule::ScheduleView;
use ringi_core::{ApiError, ApprovalId};
use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::JsValue;

use super::{n, opt, s, D1Store, Stmt};
use crate::platform::random_bytes;

/// Events the approval page shows at most (the export has them all).
pub(crate) const TIMELINE_MAX: i64 = 200;
/// Old events one cron run deletes at most.
const RETENTION_BATCH: i64 = 500;

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

/// A key drawn once per statement (the same on each retry of it), for events that may happen more than once.
pub(super) fn random_key(id: &ApprovalId) -> String {
    format!("{}:r:{}", id.as_str(), URL_SAFE_NO_PAD.encode(random_bytes::<12>()))
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

const EVENT_COLUMNS: &str = "seq, approval_id, at, kind, actor, actor_display, detail_json";

#[derive(Debug, Deserialize)]
pub(crate) struct EventRow {
    pub(crate) seq: f64,
    approval_id: String,
    pub(crate) at: f64,
    kind: String,
    actor: String,
    actor_display: Option<String>,
    detail_json: String,
}

impl EventRow {
    fn event(self) -> Result<Event, CorruptValue> {
        let kind = EventKind::parse(&self.kind).ok_or_else(|| CorruptValue::new("approval_events.kind", &self.kind))?;
        let detail: Map<String, Value> = serde_json::from_str(&self.detail_json).map_err(|_| {
            CorruptValue::new("approval_events.detail_json", self.detail_json.chars().take(40).collect::<String>())
        })?;
        Ok(Event {
            actor: Actor::from_stored(&self.actor, self.actor_display.as_deref())?,
            approval_id: self.approval_id,
            at: format_rfc3339(self.at as i64),
            kind,
            detail,
        })
    }
}

/// Typed events; a corrupt row is a 500 (logged), never silently dropped from an audit trail.
pub(crate) fn events(rows: Vec<EventRow>) -> Result<Vec<Event>, ApiError> {
    rows.into_iter()
        .map(|r| {
            let id = r.approval_id.clone();
            r.event().map_err(super::rows::corrupt(&id))
        })
        .collect()
}

/// One export page: the events and the position of the last one.
pub struct EventPage {
    pub events: Vec<Event>,
    /// `(at, seq)` of the last event, if the page is full (more may follow).
    pub last: Option<(i64, i64)>,
}

impl D1Store {
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
        let stmt = Stmt::new(
            "DELETE FROM approval_events WHERE seq IN
               (SELECT seq FROM approval_events WHERE at < ?1 ORDER BY at, seq LIMIT ?2)",
            vec![n(before), n(RETENTION_BATCH)],
        );
        self.changes(stmt, "purge_events").await
    }
}

/// What the approval view's one round trip brings.
pub struct Viewed {
    /// The approval and its schedule as the page shows it.
    pub loaded: Option<(super::Loaded, ScheduleView)>,
    /// The approval's events, this view's first-view event included.
    pub events: Vec<Event>,
}

impl D1Store {
    /// [`D1Store::load`] plus, in the same batch, the caller's first-view event (only if the caller — `keys`,
    /// their principal keys as a JSON array — is a listed approver, and only once per approver: the GET's one
    /// documented write), the approval's timeline and its schedule (`window_ms`: the default reminder's distance
    /// from expiry). One D1 round trip.
    pub async fn view(
        &self,
        id: &ApprovalId,
        actor: &Actor,
        keys: &str,
        now: i64,
        window_ms: i64,
    ) -> Result<Viewed, ApiError> {
        let Actor::User { sub, .. } = actor else { return Err(ApiError::Internal) };
        let mut stmts = super::approvals::load_stmts(id);
        stmts.push(event_once_stmt(
            id,
            now,
            EventKind::Viewed,
            actor,
            &Map::new(),
            Once {
                key: &format!("viewed:{sub}"),
                when: "EXISTS (SELECT 1 FROM approval_principals p WHERE p.approval_id = ?1
                   AND p.pkey IN (SELECT value FROM json_each(?8)))",
                args: vec![s(keys)],
            },
        ));
        let timeline = stmts.len();
        stmts.push(timeline_stmt(id));
        let schedule = stmts.len();
        stmts.extend(super::schedule::view_stmts(id));
        let results = self.batch(&stmts, "load").await?;
        let loaded = super::approvals::read_loaded(id, &results)?;
        let rows = results[timeline].results::<EventRow>();
        let rows = crate::error::OrInternal::internal(rows, "D1 event rows")?;
        let shown = super::schedule::read_view(id, &results[schedule..], window_ms)?;
        Ok(Viewed { loaded: loaded.zip(shown), events: events(rows)? })
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
    all.extend(guard.args.iter().map(super::delegation::arg));
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
