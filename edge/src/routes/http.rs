//! What every handler shares: the request context, JSON responses, bounded bodies, the caller as the event log
//! records them.

use std::rc::Rc;

use ringi_core::base::principal::Identity;
use ringi_core::config::Config;
use ringi_core::ApiError;
use worker::{Env, Request, Response};

use crate::store::Store;

/// What every handler gets: the request's environment, the parsed configuration, and the runtime's
/// request context (work that may finish after the response: `wait_until`).
pub struct Ctx {
    pub env: Env,
    pub cfg: Rc<Config>,
    pub worker: worker::Context,
    /// This request's round trips, and its injected faults and delays (dev/bench: `D1_FAULTS`,
    /// `INJECT_LATENCY`).
    pub probe: Rc<crate::probe::Probe>,
}

impl Ctx {
    pub fn store(&self) -> Result<Store, ApiError> {
        Store::open(&self.env, self.probe.clone())
    }

    /// Runs `fut` after the response (`wait_until`), on this request's clock; then the events this request wrote
    /// are sealed into their approvals' hash chains (`crate::store::seal_written`).
    pub fn after_response(&self, fut: impl std::future::Future<Output = ()> + 'static) {
        let (env, probe) = (self.env.clone(), self.probe.clone());
        self.worker.wait_until(crate::platform::same_clock(async move {
            fut.await;
            crate::store::seal_written(&env, &probe, false).await;
        }));
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
    let limit = ringi_core::api::decision::BODY_MAX_BYTES;
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

/// The signed-in caller as the event log records them: the verified sub, shown as the verified email, else
/// the user name.
pub fn actor(who: &Identity) -> ringi_core::domain::audit::Actor {
    let display = who.email.clone().or_else(|| who.username.clone()).unwrap_or_else(|| who.sub.clone());
    ringi_core::domain::audit::Actor::User { sub: who.sub.clone(), display }
}
