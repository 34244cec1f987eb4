//! The approval page's one round trip: the approval, the caller's first-view event, the timeline and the
//! schedule, in one batch.

use ringi_core::domain::audit::{Actor, EventKind};
use ringi_core::{ApiError, ApprovalId};
use serde_json::Map;

use super::events::{event_once_stmt, timeline_stmt, Once};
use super::{s, D1Store};
use crate::error::OrInternal;
use crate::store::port::records::{page_events, EventRow, Viewed};

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
        let rows = rows.internal("D1 event rows")?;
        let shown = super::schedule::read_view(id, &results[schedule..], window_ms)?;
        Ok(Viewed { loaded: loaded.zip(shown), events: page_events(rows)? })
    }
}
