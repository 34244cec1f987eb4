//! `GET /api/v1/approvals?status=pending|decided&cursor=…`: the caller's inbox through its sub, verified
//! email and groups, index-backed and cursor-paginated.

use ringi_core::api::wire::InboxPage;
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::domain::inbox::{Cursor, InboxFilter, PAGE_SIZE};
use ringi_core::ApiError;
use worker::{Request, Response};

use crate::platform::now_ms;
use crate::store::{ApprovalStore, Store};

/// D1 binds at most 100 parameters: a caller in more groups than that sees only the first ones.
const MAX_PRINCIPALS: usize = 90;

pub async fn get(req: &Request, store: &Store, who: &Identity) -> Result<Response, ApiError> {
    let url = req.url().map_err(|_| ApiError::invalid("url", "unparsable"))?;
    let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let filter = InboxFilter::parse(param("status").as_deref())?;
    let cursor = param("cursor").map(|c| Cursor::decode(&c)).transpose()?;
    let principals: Vec<Principal> = who.principals().into_iter().take(MAX_PRINCIPALS).collect();
    let mut entries = store.inbox(who, &principals, filter, now_ms(), cursor, PAGE_SIZE + 1).await?;
    let more = entries.len() > PAGE_SIZE;
    entries.truncate(PAGE_SIZE);
    let next_cursor =
        entries.last().filter(|_| more).map(|e| Cursor { sort_at: e.sort_at, id: e.item.id.clone() }.encode());
    super::http::json(200, &InboxPage { items: entries.into_iter().map(|e| e.item).collect(), next_cursor })
}
