//! `GET /config.json`: the SPA's runtime configuration from wrangler vars (and, for an OIDC issuer, the
//! endpoints of its discovery document, which the worker caches).

use ringi_core::ApiError;
use serde_json::json;
use worker::Response;

use super::http::Ctx;
use crate::platform::log;

pub async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let Some(cfg) = crate::discovery::spa_config(&ctx.cfg).await else {
        log("error", "config_incomplete", json!({"reason": "the issuer's discovery document is unavailable"}));
        return Err(ApiError::Internal);
    };
    let mut resp = super::http::json(200, &cfg)?;
    let _ = resp.headers_mut().set("cache-control", "no-store");
    Ok(resp)
}
