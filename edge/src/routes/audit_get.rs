//! `GET /api/v1/audit?from=&to=&cursor=&limit=`: the event log of every approval, for operators (members of
//! `ADMIN_GROUP`, from verified claims). JSON pages (`{items, nextCursor}`), or CSV with `Accept: text/csv`
//! (the next cursor in the `Ringi-Next-Cursor` header).

use ringi_core::api::audit_export::{to_csv, AuditCursor, AuditPage, AuditQuery, ExportFormat, NEXT_CURSOR_HEADER};
use ringi_core::base::principal::Identity;
use ringi_core::ApiError;
use serde_json::json;
use worker::{Request, Response};

use super::http::Ctx;
use crate::error::OrInternal;
use crate::platform::{log, now_ms};
use crate::store::{AuditStore, Store};

pub async fn get(req: &Request, ctx: &Ctx, store: &Store, who: &Identity) -> Result<Response, ApiError> {
    if !ctx.cfg.is_admin(who) {
        log("info", "auth_refused", json!({"reason": "not an operator", "route": "audit", "sub": who.sub}));
        return Err(ApiError::Forbidden("the audit log is for operators (ADMIN_GROUP) only".into()));
    }
    let url = req.url().map_err(|_| ApiError::invalid("url", "unparsable"))?;
    let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let query = AuditQuery::parse(param, now_ms())?;
    let accept = req.headers().get("accept").ok().flatten();
    let page = store.audit_page(&query).await?;
    let next_cursor = page.last.map(|(at, seq)| AuditCursor { at, seq }.encode());
    let resp = match ExportFormat::from_accept(accept.as_deref()) {
        ExportFormat::Json => {
            super::http::json(200, &AuditPage { items: page.events, next_cursor: next_cursor.clone() })?
        }
        ExportFormat::Csv => {
            let mut resp = Response::ok(to_csv(&page.events)).internal("csv response")?;
            let headers = resp.headers_mut();
            headers.set("content-type", "text/csv; charset=utf-8").internal("csv header")?;
            headers.set("content-disposition", "attachment; filename=\"ringi-audit.csv\"").internal("csv header")?;
            if let Some(c) = &next_cursor {
                headers.set(NEXT_CURSOR_HEADER, c).internal("csv header")?;
            }
            resp
        }
    };
    Ok(resp)
}
