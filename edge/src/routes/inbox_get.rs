//! `GET /api/v1/approvals?status=pending|decided&cursor=…`: the caller's inbox through its sub, verified
//! email and groups, index-backed and cursor-paginated.

use ringi_core::approval::Quorum;
use ringi_core::inbox::{Cursor, InboxFilter, PAGE_SIZE};
use ringi_core::time::format_rfc3339;
use ringi_core::wire::{InboxItem, InboxPage, Progress};
use ringi_core::ApiError;
use worker::{Request, Response};

use super::Ctx;
use crate::auth::authenticate;
use crate::platform::now_ms;
use crate::store::{pkey, stored_status};

pub async fn get(req: &Request, ctx: &Ctx) -> Result<Response, ApiError> {
    let who = authenticate(req, &ctx.cfg, &ctx.cfg.user_rules()).await?;
    let url = req.url().map_err(|_| ApiError::invalid("url", "unparsable"))?;
    let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let filter = InboxFilter::parse(param("status").as_deref())?;
    let cursor = param("cursor").map(|c| Cursor::decode(&c)).transpose()?;
    // D1 binds at most 100 parameters: a caller in more groups than that sees only the first ones.
    let keys: Vec<String> = who.principals().iter().map(pkey).take(90).collect();
    let pending = filter == InboxFilter::Pending;
    let now = now_ms();
    let rows = ctx.store()?.inbox(&keys, pending, now, cursor.map(|c| (c.sort_at, c.id)), PAGE_SIZE + 1).await?;
    let more = rows.len() > PAGE_SIZE;
    let mut items: Vec<InboxItem> = Vec::with_capacity(rows.len().min(PAGE_SIZE));
    for r in rows.iter().take(PAGE_SIZE) {
        let (status, verdict) = stored_status(&r.id, &r.status, r.confirmed)?;
        items.push(InboxItem {
            id: r.id.clone(),
            status: status.effective(r.expires_at as i64, now),
            verdict,
            title: r.title.clone(),
            summary: r.summary.chars().take(280).collect(),
            context: serde_json::from_str(&r.context_json).unwrap_or_default(),
            progress: Progress {
                approvals: r.approvals as u32,
                required: Quorum::parse(&r.quorum).unwrap_or(Quorum::Any).required(r.approver_count as usize),
            },
            created_at: format_rfc3339(r.created_at as i64),
            expires_at: format_rfc3339(r.expires_at as i64),
            decided_at: r.decided_at.map(|t| format_rfc3339(t as i64)),
        });
    }
    let next_cursor = more
        .then(|| rows.get(PAGE_SIZE - 1))
        .flatten()
        .map(|r| Cursor { sort_at: r.sort_at as i64, id: r.id.clone() }.encode());
    super::json(200, &InboxPage { items, next_cursor })
}
