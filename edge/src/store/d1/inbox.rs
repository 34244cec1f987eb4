//! The caller's inbox: one index range per principal (`ringi_core::domain::inbox::inbox_sql`).

use ringi_core::base::principal::{Identity, Principal};
use ringi_core::domain::inbox::{inbox_sql, Cursor, InboxFilter};
use ringi_core::ApiError;
use wasm_bindgen::JsValue;

use super::{n, s, D1Store, Stmt};
use crate::store::port::rows::{InboxEntry, InboxRow};

impl D1Store {
    /// One page of the caller's inbox, after `cursor` (the last item already shown). `limit` rows at most.
    pub async fn inbox(
        &self,
        who: &Identity,
        principals: &[Principal],
        filter: InboxFilter,
        now: i64,
        cursor: Option<Cursor>,
        limit: usize,
    ) -> Result<Vec<InboxEntry>, ApiError> {
        let pending = filter == InboxFilter::Pending;
        let (c_at, c_id) = match cursor {
            Some(c) => (c.sort_at, c.id),
            None if pending => (i64::MIN / 2, String::new()),
            None => (i64::MAX / 2, "~".into()),
        };
        let mut args: Vec<JsValue> = principals.iter().map(|p| s(&p.key())).collect();
        args.extend([n(if pending { now } else { i64::MAX / 2 }), n(c_at), s(&c_id), n(limit as i64)]);
        let rows: Vec<InboxRow> = self.rows(Stmt::new(inbox_sql(principals.len(), pending), args), "inbox").await?;
        rows.into_iter().map(|r| r.typed(now, who)).collect()
    }
}
