//! `GET /config.json`: the SPA's runtime configuration from wrangler vars.

use ringi_core::ApiError;
use worker::Response;

use super::Ctx;

pub fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let mut resp = super::json(200, &ctx.cfg.spa_config())?;
    let _ = resp.headers_mut().set("cache-control", "no-store");
    Ok(resp)
}
