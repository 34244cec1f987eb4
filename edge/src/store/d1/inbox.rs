//! The caller's inbox: one index range per principal (`ringi_core::sql::inbox`).

use ringi_core::base::principal::{Identity, Principal};
use ringi_core::domain::inbox::{Cursor, InboxFilter};
use ringi_core::sql::inbox;
use ringi_core::ApiError;

use super::D1Store;
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
        let keys: Vec<String> = principals.iter().map(Principal::key).collect();
        let stmt = inbox::page(&keys, filter, now, cursor.as_ref(), limit).into();
        let rows: Vec<InboxRow> = self.rows(stmt, "inbox").await?;
        rows.into_iter().map(|r| r.typed(now, who)).collect()
    }
}
