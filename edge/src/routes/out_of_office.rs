//! `GET/PUT/DELETE /api/v1/me/out-of-office`: the signed-in user's "send my approvals to X from … until …",
//! keyed by their verified `sub` (and routed by their verified email too). While it is in effect, approvals
//! registered naming them go to X (the store's insert routes them, `ringi_core::sql::routing`); approvals they
//! already have are not moved (the approval page offers to delegate them).

use ringi_core::base::principal::{Identity, Principal};
use ringi_core::config::Config;
use ringi_core::domain::delegation::{OutOfOffice, OutOfOfficeAnswer, OutOfOfficeRequest};
use ringi_core::ApiError;
use worker::{Method, Request, Response};

use crate::platform::now_ms;
use crate::store::{GovernanceStore, Store};

pub async fn handle(req: &mut Request, cfg: &Config, store: &Store, who: &Identity) -> Result<Response, ApiError> {
    let now = now_ms();
    match req.method() {
        Method::Put => {
            let body = super::http::body_bytes(req).await?;
            let o = OutOfOfficeRequest::parse(&body, who, &cfg.mail_allowed_domains, now)?;
            // The email routes approvals naming the person by email: only a verified one (never under
            // EMAIL_VERIFIED=trust, where anyone could claim an address and take its approvals).
            let email = who.email.as_deref().filter(|_| cfg.routes_by_email());
            store.set_out_of_office(&who.sub, email, &o, now).await?;
            let shown = OutOfOffice::new(o.delegate, o.starts_at, o.ends_at, o.note, now);
            answer(Some(shown))
        }
        Method::Delete => {
            store.clear_out_of_office(&who.sub).await?;
            answer(None)
        }
        _ => {
            let row = store.out_of_office(&who.sub).await?;
            let shown = row
                .map(|r| {
                    let delegate = Principal::from_key(&r.delegate).ok_or(ApiError::Internal)?;
                    Ok::<_, ApiError>(OutOfOffice::new(delegate, r.starts_at as i64, r.ends_at as i64, r.note, now))
                })
                .transpose()?;
            answer(shown)
        }
    }
}

fn answer(out_of_office: Option<OutOfOffice>) -> Result<Response, ApiError> {
    super::http::json(200, &OutOfOfficeAnswer { out_of_office })
}
