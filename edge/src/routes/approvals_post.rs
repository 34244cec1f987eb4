//! `POST /api/v1/approvals`: a workflow registers a paused task. Only machine credentials register: an API key
//! whose SHA-256 is configured, or a client-credentials access token of an app client listed in
//! `REGISTER_CLIENT_IDS` with `REGISTER_SCOPE` and no user in it.

use ringi_core::api::register::parse_registration_with_channels;
use ringi_core::api::wire::RegisterResponse;
use ringi_core::base::time::format_rfc3339;
use ringi_core::{base::ids::APPROVAL_ID_RANDOM_BYTES, ApiError, ApprovalId};
use serde_json::json;
use worker::{Request, Response};

use super::http::Ctx;
use crate::auth::{api_key_label, bearer, verify};
use crate::platform::{log, now_ms, random_bytes};
use crate::store::{ApprovalStore, Inserted, Registrant, Store};

fn refused(reason: &str) -> ApiError {
    log("info", "auth_refused", json!({"reason": reason, "route": "register"}));
    ApiError::Unauthorized
}

/// The registrant's label (`api-key:…` or `client:…`), recorded on the approval and rate-limited.
pub async fn authorize(req: &Request, ctx: &Ctx) -> Result<String, ApiError> {
    let Some(credential) = bearer(req) else { return Err(refused("no bearer credential")) };
    if credential.matches('.').count() == 2 {
        if ctx.cfg.register_client_ids.is_empty() {
            return Err(refused("a JWT, but REGISTER_CLIENT_IDS is empty: only API keys register"));
        }
        let who =
            verify(&credential, &ctx.cfg, &ctx.cfg.register_rules()).await.map_err(|e| refused(&e.to_string()))?;
        if !who.scopes.iter().any(|s| s == &ctx.cfg.register_scope) {
            return Err(ApiError::Forbidden(format!("the token lacks the scope {}", ctx.cfg.register_scope)));
        }
        // Client-credentials tokens name no user; a person's token from a registering client does.
        if who.username.is_some() {
            log(
                "info",
                "auth_refused",
                json!({"reason": "a user's token", "route": "register", "client": who.client_id}),
            );
            return Err(ApiError::Forbidden("only machine (client-credentials) tokens may register approvals".into()));
        }
        return Ok(format!("client:{}", who.client_id));
    }
    if let Some(label) = api_key_label(&ctx.cfg, &credential) {
        return Ok(label);
    }
    Err(refused("unknown API key"))
}

pub async fn post(req: &mut Request, ctx: &Ctx, store: &Store, caller: &str) -> Result<Response, ApiError> {
    let body = super::http::body_bytes(req).await?;
    let now = now_ms();
    let cfg = &ctx.cfg;
    let new =
        parse_registration_with_channels(&body, now, &cfg.mail_allowed_domains, &cfg.chat_channels, &cfg.aws_targets)?
            .with_on_expiry_lead(now, ctx.cfg.on_expiry_lead_ms);
    ringi_core::domain::self_approval::check_enforceable(
        &new.requested_by,
        new.allow_self_approval,
        ctx.cfg.emails_verifiable(),
    )?;
    if let Some(required) = &new.require_sign_in {
        ringi_core::domain::step_up::check_provable(required, ctx.cfg.sign_in_provable())?;
    }
    let id = new.id.clone().unwrap_or_else(|| ApprovalId::from_random(random_bytes::<APPROVAL_ID_RANDOM_BYTES>()));
    let registrant = Registrant { label: caller, rate_per_minute: ctx.cfg.register_rate_per_minute };
    let inserted = store.insert(&id, &new, &registrant, now, ctx.cfg.reminder_window_ms).await?;
    let (created, routed) = match inserted {
        Inserted::Created { routed } => (true, routed),
        Inserted::Exists => (false, Vec::new()),
        Inserted::RateLimited { retry_after } => {
            log("warn", "registration_rate_limited", json!({"by": caller}));
            return Err(ApiError::RateLimited { retry_after });
        }
    };
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
        // Answer first, mail (and chat) after the response: an EventBridge API destination gives up after 5 s
        // and redelivers, so a slow SES or webhook must not make the registration look failed. The outcome is
        // recorded; the cron retries failures and deliveries whose sender vanished.
        let (cfg, env, probe, id) = (ctx.cfg.clone(), ctx.env.clone(), ctx.probe.clone(), id.clone());
        ctx.after_response(async move { crate::mailer::send_request_of(&cfg, &env, probe, &id, &routed).await });
    }
    super::http::json(
        status,
        &RegisterResponse {
            id: id.to_string(),
            url: ctx.cfg.approval_url(id.as_str()),
            expires_at: format_rfc3339(expires_at),
        },
    )
}
