//! One file per route; [`dispatch`] maps method + path to them.

mod approval_get;
mod approvals_post;
mod decision_post;
mod health;
mod inbox_get;
mod spa_config;

use std::rc::Rc;

use ringi_core::config::Config;
use ringi_core::ApiError;
use worker::{Env, Request, Response};

/// What every handler gets: the request's environment, the parsed configuration, and the runtime's
/// request context (work that may finish after the response: `wait_until`).
pub struct Ctx {
    pub env: Env,
    pub cfg: Rc<Config>,
    pub worker: worker::Context,
    /// This request's D1 call counter and injected faults (dev/bench: `D1_FAULTS`).
    pub d1: Rc<crate::store::D1Probe>,
}

impl Ctx {
    pub fn store(&self) -> Result<crate::store::Store, ApiError> {
        crate::store::Store::open(&self.env, self.d1.clone())
    }
}

/// Paths the worker answers itself; everything else is a static asset of the SPA.
pub fn is_api(path: &str) -> bool {
    path.starts_with("/api/") || path == "/api" || path == "/healthz" || path == "/config.json"
}

pub async fn dispatch(mut req: Request, ctx: &Ctx) -> Result<Response, ApiError> {
    let path = req.path();
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    // The raw method: workers-rs maps methods it does not know (PROPFIND, QUERY …) to GET.
    let method = req.inner().method();
    match (segments.as_slice(), method.as_str()) {
        (["healthz"], "GET" | "HEAD") => health::get(),
        (["config.json"], "GET" | "HEAD") => spa_config::get(ctx),
        (["api", "v1", "approvals"], "POST") => approvals_post::post(&mut req, ctx).await,
        (["api", "v1", "approvals"], "GET") => inbox_get::get(&req, ctx).await,
        (["api", "v1", "approvals", id], "GET") => approval_get::get(&req, ctx, id).await,
        (["api", "v1", "approvals", id, "decision"], "POST") => decision_post::post(&mut req, ctx, id).await,
        (["healthz"] | ["config.json"], _) => Err(ApiError::MethodNotAllowed { allow: "GET, HEAD" }),
        (["api", "v1", "approvals"], _) => Err(ApiError::MethodNotAllowed { allow: "GET, POST" }),
        (["api", "v1", "approvals", _], _) => Err(ApiError::MethodNotAllowed { allow: "GET" }),
        (["api", "v1", "approvals", _, "decision"], _) => Err(ApiError::MethodNotAllowed { allow: "POST" }),
        _ => Err(ApiError::NoRoute),
    }
}

/// JSON response with a status.
pub fn json<T: serde::Serialize>(status: u16, body: &T) -> Result<Response, ApiError> {
    use crate::error::OrInternal;
    Ok(Response::from_json(body).internal("serialize response")?.with_status(status))
}

/// Reads a request body, refusing oversized ones before buffering more than the limit: a declared
/// `Content-Length` over it is refused unread, and a body without one (chunked) is read as a stream and
/// refused as soon as it passes the limit, without waiting for its end.
pub async fn body_bytes(req: &mut Request) -> Result<Vec<u8>, ApiError> {
    use crate::error::OrInternal;
    use futures_util::StreamExt;
    let limit = ringi_core::decision::BODY_MAX_BYTES;
    let too_large = || ApiError::PayloadTooLarge(format!("request body exceeds {limit} bytes"));
    let declared = req.headers().get("content-length").ok().flatten().and_then(|l| l.parse::<usize>().ok());
    if declared.is_some_and(|l| l > limit) {
        return Err(too_large());
    }
    if req.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = req.stream().internal("read body")?;
    let mut body = Vec::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.internal("read body")?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
