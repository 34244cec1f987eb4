//! `POST /api/v1/approvals`: a workflow registers a paused task. Machine auth: a client-credentials access
//! token with `REGISTER_SCOPE`, or an API key whose SHA-256 is configured.

use ringi_core::register::parse_registration;
use ringi_core::time::format_rfc3339;
use ringi_core::wire::RegisterResponse;
use ringi_core::{ids::APPROVAL_ID_RANDOM_BYTES, ApiError, ApprovalId};
use serde_json::json;
use worker::{Request, Response};

use super::Ctx;
use crate::auth::{api_key_matches, bearer, verify};
use crate::platform::{log, now_ms, random_bytes};

async fn authorize(req: &Request, ctx: &Ctx) -> Result<String, ApiError> {
    let Some(credential) = bearer(req) else {
        log("info", "auth_refused", json!({"reason": "no bearer credential", "route": "register"}));
        return Err(ApiError::Unauthorized);
    };
    if credential.matches('.').count() == 2 {
        let who = verify(&credential, &ctx.cfg, &ctx.cfg.register_rules()).await.map_err(|e| {
            log("info", "auth_refused", json!({"reason": e.to_string(), "route": "register"}));
            ApiError::Unauthorized
        })?;
        if !who.scopes.iter().any(|s| s == &ctx.cfg.register_scope) {
            return Err(ApiError::Forbidden(format!("the token lacks the scope {}", ctx.cfg.register_scope)));
        }
        return Ok(format!("client:{}", who.client_id));
    }
    if api_key_matches(&ctx.cfg, &credential) {
        return Ok("api-key".into());
    }
    log("info", "auth_refused", json!({"reason": "unknown API key", "route": "register"}));
    Err(ApiError::Unauthorized)
}

pub async fn post(req: &mut Request, ctx: &Ctx) -> Result<Response, ApiError> {
    let caller = authorize(req, ctx).await?;
    let body = super::body_bytes(req).await?;
    let now = now_ms();
    let new = parse_registration(&body, now)?;
    let id = new.id.clone().unwrap_or_else(|| ApprovalId::from_random(random_bytes::<APPROVAL_ID_RANDOM_BYTES>()));
    let store = ctx.store()?;
    let created = store.insert(&id, &new, now, ctx.cfg.reminder_window_ms).await?;
    let (status, id, expires_at) = if created {
        (201, id, new.expires_at)
    } else {
        // The ID or the task is taken. The same request again (EventBridge delivers at least once) gets the
        // first answer; anything else for the same ID or task is a conflict.
        let token_sha256 = new.token.fingerprint();
        let existing = store.registered(&id, &token_sha256).await?;
        let same = existing.into_iter().find(|r| {
            r.token_sha256 == token_sha256
                && r.request_sha256.as_ref().map_or(r.id == id.as_str(), |h| *h == new.request_sha256)
        });
        let Some(same) = same else { return Err(ApiError::DuplicateApproval) };
        (200, ApprovalId::parse(&same.id).map_err(|_| ApiError::Internal)?, same.expires_at as i64)
    };
    log("info", "registered", json!({"approvalId": id.as_str(), "by": caller, "created": created}));
    if created {
        // Answer first, mail after the response: an EventBridge API destination gives up after 5 s and
        // redelivers, so a slow SES must not make the registration look failed. The outcome is recorded;
        // the cron retries failures and mails whose sender vanished.
        let (cfg, env, d1, id) = (ctx.cfg.clone(), ctx.env.clone(), ctx.d1.clone(), id.clone());
        ctx.worker.wait_until(async move { crate::mailer::send_request_of(&cfg, &env, d1, &id).await });
    }
    super::json(
        status,
        &RegisterResponse {
            id: id.to_string(),
            url: ctx.cfg.approval_url(id.as_str()),
            expires_at: format_rfc3339(expires_at),
        },
    )
}
