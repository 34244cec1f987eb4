//! `GET /.well-known/jwks.json`: the public keys of the worker's tokens for AWS — the signing key's and, during
//! a rotation, the next or previous one (`FEDERATION_PUBLISHED_KEYS`).

use ringi_core::ApiError;
use worker::Response;

use super::http::Ctx;

pub fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let federation = ctx.cfg.federation.as_ref().ok_or(ApiError::NotFound)?;
    super::http::json(200, &federation.jwks())
}
