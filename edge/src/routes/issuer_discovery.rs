//! `GET /.well-known/openid-configuration`: the worker as an OpenID Connect issuer for AWS (core::adapters::federation).
//! What IAM reads to find the keys of the tokens the worker trades for each target account's role.

use ringi_core::adapters::federation::Federation;
use ringi_core::ApiError;
use worker::Response;

use super::http::Ctx;

pub fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    ctx.cfg.keys.as_ref().ok_or(ApiError::NotFound)?;
    super::http::json(200, &Federation::discovery(ctx.cfg.issuer_url()))
}
