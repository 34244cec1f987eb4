//! `GET /.well-known/jwks.json`: the key ring's public keys — what checks a decision receipt and, under federation,
//! the worker's tokens for AWS: the signing key's and, during a rotation, the next or previous one (`PUBLISHED_KEYS`).

use ringi_core::ApiError;
use worker::Response;

use super::http::Ctx;

pub fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let keys = ctx.cfg.keys.as_ref().ok_or(ApiError::NotFound)?;
    super::http::json(200, &keys.jwks())
}
