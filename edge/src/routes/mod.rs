//! One file per route; [`dispatch`] maps method + path onto `ringi_core::api::route::Route`, authenticates the
//! caller as the route's table entry says, opens the store, and hands each handler what it needs.

mod approval_get;
mod approvals_post;
mod audit_get;
mod decision_attempt;
mod decision_post;
mod delegation_post;
mod health;
mod inbox_get;
mod issuer_discovery;
mod issuer_keys;
mod out_of_office;
mod principals_put;
mod push;
mod spa_config;

mod http;
pub use http::Ctx;

use ringi_core::api::route::{Auth, Route, Unrouted};
use ringi_core::base::principal::Identity;
use ringi_core::ApiError;
use worker::{Request, Response};

use crate::auth::authenticate;

pub use ringi_core::api::route::is_api;

/// Who is calling, as the route's [`Auth`] requires.
enum Caller {
    Anonymous,
    /// The registrant's label (`api-key:…` or `client:…`).
    Registrant(String),
    User(Identity),
}

async fn caller(req: &Request, ctx: &Ctx, auth: Auth) -> Result<Caller, ApiError> {
    Ok(match auth {
        Auth::None => Caller::Anonymous,
        Auth::Machine => Caller::Registrant(approvals_post::authorize(req, ctx).await?),
        Auth::User => Caller::User(authenticate(req, &ctx.cfg, &ctx.cfg.user_rules()).await?),
    })
}

pub async fn dispatch(mut req: Request, ctx: &Ctx) -> Result<Response, ApiError> {
    // The raw method: workers-rs maps methods it does not know (PROPFIND, QUERY …) to GET.
    let method = req.inner().method();
    let route = match Route::parse(&method, &req.path()) {
        Ok(route) => route,
        Err(Unrouted::NotAnId { auth }) => {
            // Not an approval ID: 404, but only to a caller who may ask (else 401 as for any ID).
            caller(&req, ctx, auth).await?;
            return Err(ApiError::NotFound);
        }
        Err(other) => return Err(other.into()),
    };
    let who = caller(&req, ctx, route.auth()).await?;
    match (route, who) {
        (Route::Health, _) => health::get(),
        (Route::SpaConfig, _) => spa_config::get(ctx).await,
        (Route::IssuerDiscovery, _) => issuer_discovery::get(ctx),
        (Route::IssuerKeys, _) => issuer_keys::get(ctx),
        (Route::Register, Caller::Registrant(label)) => {
            approvals_post::post(&mut req, ctx, &ctx.store()?, &label).await
        }
        (Route::Inbox, Caller::User(who)) => inbox_get::get(&req, &ctx.store()?, &who).await,
        (Route::Approval(id), Caller::User(who)) => {
            approval_get::get(&ctx.store()?, &who, &id, ctx.cfg.reminder_window_ms).await
        }
        (Route::Decision(id), Caller::User(who)) => decision_post::post(&mut req, ctx, &ctx.store()?, &who, &id).await,
        (Route::Audit, Caller::User(who)) => audit_get::get(&req, ctx, &ctx.store()?, &who).await,
        (Route::Delegation(id), Caller::User(who)) => {
            delegation_post::post(&mut req, ctx, &ctx.store()?, &who, &id).await
        }
        (Route::Principals(id), Caller::User(who)) => {
            principals_put::put(&mut req, ctx, &ctx.store()?, &who, &id).await
        }
        (Route::OutOfOffice, Caller::User(who)) => out_of_office::handle(&mut req, &ctx.cfg, &ctx.store()?, &who).await,
        (Route::Push, Caller::User(who)) => push::handle(&mut req, &ctx.cfg, &ctx.store()?, &who).await,
        // The table gives each route one kind of caller: nothing else reaches here.
        _ => Err(ApiError::Internal),
    }
}
