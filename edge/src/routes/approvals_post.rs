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
use crate::store::Store;

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
    let store = Store::open(&ctx.env)?;
    let created = store.insert(&id, &new, now, ctx.cfg.reminder_window_ms).await?;
    let (status, expires_at) = if created {
        (201, new.expires_at)
    } else {
        // Same ID again: idempotent when it is the same task, a conflict otherwise.
        let existing = store.get(&id).await?.ok_or(ApiError::Internal)?;
        if existing.token_sha256 != new.token.fingerprint() {
            return Err(ApiError::DuplicateApproval);
        }
        (200, existing.expires_at as i64)
    };
    log("info", "registered", json!({"approvalId": id.as_str(), "by": caller, "created": created}));
    if created {
        // Stored first, mailed second: a mail failure is recorded and retried by the cron, never fatal.
        if let Some(row) = store.mail_row(&id).await? {
            crate::mailer::send_request(&ctx.cfg, &store, &row).await?;
        }
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
