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
