//! `GET /healthz`: liveness, no dependencies touched.

use ringi_core::ApiError;
use serde_json::json;
use worker::Response;

pub fn get() -> Result<Response, ApiError> {
    super::http::json(200, &json!({"status": "ok"}))
}
