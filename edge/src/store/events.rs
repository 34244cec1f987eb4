//! The append-only event log (`approval_events`, core::audit). Events are written as statements inside the
//! batch that makes the change they record, so that a change and its event land together or not at all.

use ringi_core::audit::{Actor, EventKind};
use ringi_core::ApprovalId;
use serde_json::{Map, Value};

use super::{n, opt, s, Stmt};

/// The INSERT of one event, to put into the batch of the change it records.
pub(crate) fn event_stmt(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
) -> Stmt {
    Stmt::new(
        "INSERT INTO approval_events (approval_id, at, kind, actor, actor_display, detail_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        vec![
            s(id.as_str()),
            n(at),
            s(kind.as_str()),
            s(&actor.key()),
            opt(actor.display()),
            s(&Value::Object(detail.clone()).to_string()),
        ],
    )
}

/// [`event_stmt`] for a change whose statement in the same batch may change nothing (a race lost, or a retry
/// of a batch that went through): written only when `cond` holds (SQL over ?1 = the approval id, e.g.
/// `changes() = 1` right after that statement), and never twice for the same event (same approval, time,
/// kind, actor and detail: a retried batch).
pub(crate) fn event_stmt_if(
    id: &ApprovalId,
    at: i64,
    kind: EventKind,
    actor: &Actor,
    detail: &Map<String, Value>,
    cond: &str,
) -> Stmt {
    let mut stmt = event_stmt(id, at, kind, actor, detail);
    stmt.sql = format!(
        "INSERT INTO approval_events (approval_id, at, kind, actor, actor_display, detail_json)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE ({cond}) AND NOT EXISTS (SELECT 1 FROM approval_events e
           WHERE e.approval_id = ?1 AND e.at = ?2 AND e.kind = ?3 AND e.actor = ?4 AND e.detail_json = ?6)"
    );
    stmt
}
