//! The one place where an [`ApiError`] becomes an HTTP response, and where platform failures become
//! `ApiError::Internal` (logged with context, never shown).

use ringi_core::ApiError;
use serde_json::json;
use worker::Response;

use crate::platform::log;

pub fn error_response(e: &ApiError) -> Response {
    let mut resp = Response::from_json(&e.body()).unwrap_or_else(|_| Response::empty().expect("empty response"));
    resp = resp.with_status(e.status());
    match e {
        ApiError::Unauthorized => {
            let _ = resp.headers_mut().set("www-authenticate", "Bearer");
        }
        ApiError::StepUpRequired(needed) => {
            let _ = resp.headers_mut().set("www-authenticate", &ringi_core::domain::step_up::challenge(needed));
        }
        ApiError::MethodNotAllowed { allow } => {
            let _ = resp.headers_mut().set("allow", allow);
        }
        _ => {}
    }
    if let Some(secs) = e.retry_after() {
        let _ = resp.headers_mut().set("retry-after", &secs.to_string());
    }
    resp
}

pub trait OrInternal<T> {
    /// Logs the platform error under `what` and turns it into a 500.
    fn internal(self, what: &str) -> Result<T, ApiError>;
}

impl<T, E: std::fmt::Display> OrInternal<T> for Result<T, E> {
    fn internal(self, what: &str) -> Result<T, ApiError> {
        self.map_err(|e| {
            log("error", "internal", json!({"what": what, "error": e.to_string()}));
            ApiError::Internal
        })
    }
}
