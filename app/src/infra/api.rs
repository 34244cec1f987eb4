//! The worker's JSON API (design §3) over gloo-net, with the access token as bearer. Errors are keyed on
//! the stable `error.code` of `{"error":{"code","message","field"?}}` (ringi-core `ErrorBody`).
//!
//! The SPA's readings of the wire's strings (error codes, audit verdicts, `context` keys) live here and
//! nowhere else, so that switching them to core's typed enums later touches one file.

use gloo_net::http::{Request, RequestBuilder, Response};
use ringi_core::decision::DecisionRequest;
use ringi_core::wire::{ApprovalView, AuditEntry, DecisionResponse, InboxPage};
use ringi_core::ErrorBody;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::RequestCache;

use crate::infra::auth;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// No usable token, or the worker answered 401: sign in again.
    Unauthorized,
    /// 404: unknown approval or not one of its approvers (deliberately the same).
    NotFound,
    /// 409 with its code: `already_decided`, `expired`, `in_progress`, `already_voted`, `already_satisfied`.
    Conflict { code: String, message: String },
    /// 400 (`field` names the request field, e.g. `feedback.reason` or `comment`) and 413.
    Invalid { field: Option<String>, message: String },
    /// 503 (Step Functions unavailable; nothing was decided) or a network failure: retry later.
    Unavailable(String),
    /// Anything else (502 upstream_rejected, 500, unexpected bodies).
    Server { status: u16, message: String },
}

impl std::fmt::Display for ApiError {
    /// A one-line technical detail, shown under a translated message (never the Debug form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Unauthorized => f.write_str("HTTP 401: sign-in required"),
            ApiError::NotFound => f.write_str("HTTP 404: not found"),
            ApiError::Conflict { code, message } => write!(f, "HTTP 409 {code}: {message}"),
            ApiError::Invalid { field: Some(field), message } => write!(f, "{field}: {message}"),
            ApiError::Invalid { field: None, message } => f.write_str(message),
            ApiError::Unavailable(message) => write!(f, "unavailable: {message}"),
            ApiError::Server { status, message } => write!(f, "HTTP {status}: {message}"),
        }
    }
}

/// The five 409s of a decision (design §8), read from the error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    AlreadyDecided,
    Expired,
    InProgress,
    AlreadyVoted,
    AlreadySatisfied,
    /// A code this SPA does not know (a newer worker).
    Other,
}

impl Conflict {
    pub fn of(code: &str) -> Self {
        match code {
            "already_decided" => Conflict::AlreadyDecided,
            "expired" => Conflict::Expired,
            "in_progress" => Conflict::InProgress,
            "already_voted" => Conflict::AlreadyVoted,
            "already_satisfied" => Conflict::AlreadySatisfied,
            _ => Conflict::Other,
        }
    }
}

/// Whether an audit entry (or the caller's own decision) is an approval; `decision` is `approve`|`reject`.
pub fn approves(entry: &AuditEntry) -> bool {
    entry.decision == "approve"
}

/// What a 400's `field` points at on the approval page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldRef<'a> {
    Comment,
    /// `feedback.{name}`
    Feedback(&'a str),
}

impl<'a> FieldRef<'a> {
    pub fn of(field: &'a str) -> Option<Self> {
        if field == "comment" {
            return Some(FieldRef::Comment);
        }
        field.strip_prefix("feedback.").map(FieldRef::Feedback)
    }
}

/// What the request came from, read from the registrant's free-text `context`: `requestedBy`, the state
/// machine and execution (from `executionArn`) and the step (`stateName`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContextInfo {
    pub requested_by: Option<String>,
    pub machine: Option<String>,
    pub execution: Option<String>,
    pub execution_arn: Option<String>,
    pub step: Option<String>,
}

impl ContextInfo {
    pub fn of(context: &Map<String, Value>) -> Self {
        let s = |k: &str| context.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
        let arn = s("executionArn");
        // arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME
        let (machine, execution) = match arn.as_deref().map(|a| a.split(':').collect::<Vec<_>>()) {
            Some(parts) if parts.len() >= 8 && parts[5] == "execution" => {
                (Some(parts[6].to_owned()), Some(parts[7..].join(":")))
            }
            _ => (None, arn.clone()),
        };
        ContextInfo { requested_by: s("requestedBy"), machine, execution, execution_arn: arn, step: s("stateName") }
    }

    /// "machine › step" for one line (the inbox), falling back to what is known.
    pub fn source(&self) -> Option<String> {
        match (&self.machine, &self.step) {
            (Some(m), Some(s)) => Some(format!("{m} › {s}")),
            (Some(m), None) => Some(m.clone()),
            (None, Some(s)) => Some(s.clone()),
            (None, None) => self.execution.clone(),
        }
    }
}

fn with_auth(builder: RequestBuilder) -> Result<RequestBuilder, ApiError> {
    let token = auth::bearer().ok_or(ApiError::Unauthorized)?;
    Ok(builder
        .header("Authorization", &format!("Bearer {token}"))
        .header("Accept", "application/json")
        .cache(RequestCache::NoStore))
}

async fn read<T: DeserializeOwned>(response: Response) -> Result<T, ApiError> {
    let status = response.status();
    let text = response.text().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    if (200..300).contains(&status) {
        return serde_json::from_str(&text)
            .map_err(|e| ApiError::Server { status, message: format!("unexpected response: {e}") });
    }
    let body: Option<ErrorBody> = serde_json::from_str(&text).ok();
    let (code, message, field) = match body {
        Some(b) => (b.error.code, b.error.message, b.error.field),
        None => (String::new(), format!("HTTP {status}"), None),
    };
    Err(match status {
        401 => ApiError::Unauthorized,
        404 => ApiError::NotFound,
        409 => ApiError::Conflict { code, message },
        400 | 413 => ApiError::Invalid { field, message },
        503 => ApiError::Unavailable(message),
        _ => ApiError::Server { status, message },
    })
}

async fn send<T: DeserializeOwned>(request: Request) -> Result<T, ApiError> {
    let response = request.send().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    read(response).await
}

fn encode(value: &str) -> String {
    String::from(js_sys::encode_uri_component(value))
}

/// `GET /api/v1/approvals?status=pending|decided&cursor=…`
pub async fn inbox(decided: bool, cursor: Option<&str>) -> Result<InboxPage, ApiError> {
    let mut url = format!("/api/v1/approvals?status={}", if decided { "decided" } else { "pending" });
    if let Some(c) = cursor {
        url.push_str("&cursor=");
        url.push_str(&encode(c));
    }
    let request = with_auth(Request::get(&url))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send(request).await
}

/// The request `app/boot.js` already sent for this URL while the wasm was downloading
/// (`globalThis.ringiPrefetch = {url, response}`), taken at most once.
fn take_prefetched(url: &str) -> Option<js_sys::Promise> {
    let global = js_sys::global();
    let key = JsValue::from_str("ringiPrefetch");
    let prefetch = js_sys::Reflect::get(&global, &key).ok().filter(|p| p.is_object())?;
    let _ = js_sys::Reflect::delete_property(&global, &key);
    let for_url = js_sys::Reflect::get(&prefetch, &JsValue::from_str("url")).ok()?.as_string()?;
    if for_url != url {
        return None;
    }
    js_sys::Reflect::get(&prefetch, &JsValue::from_str("response")).ok()?.dyn_into().ok()
}

/// `GET /api/v1/approvals/{id}`
pub async fn approval(id: &str) -> Result<ApprovalView, ApiError> {
    let url = format!("/api/v1/approvals/{}", encode(id));
    if auth::bearer().is_none() {
        return Err(ApiError::Unauthorized);
    }
    if let Some(pending) = take_prefetched(&url) {
        // A network failure of the early request: ask again below.
        if let Ok(raw) = JsFuture::from(pending).await.and_then(|r| r.dyn_into::<web_sys::Response>()) {
            return read(Response::from(raw)).await;
        }
    }
    let request = with_auth(Request::get(&url))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send(request).await
}

/// `POST /api/v1/approvals/{id}/decision`
pub async fn decide(id: &str, body: &DecisionRequest) -> Result<DecisionResponse, ApiError> {
    let url = format!("/api/v1/approvals/{}/decision", encode(id));
    let request = with_auth(Request::post(&url))?
        .json(body)
        .map_err(|e| ApiError::Invalid { field: None, message: e.to_string() })?;
    send(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conflict_codes() {
        assert_eq!(Conflict::of("already_decided"), Conflict::AlreadyDecided);
        assert_eq!(Conflict::of("already_satisfied"), Conflict::AlreadySatisfied);
        assert_eq!(Conflict::of("something_new"), Conflict::Other);
    }

    #[test]
    fn field_refs() {
        assert_eq!(FieldRef::of("comment"), Some(FieldRef::Comment));
        assert_eq!(FieldRef::of("feedback.risk"), Some(FieldRef::Feedback("risk")));
        assert_eq!(FieldRef::of("approvers[0]"), None);
    }

    #[test]
    fn errors_read_as_messages() {
        let e = ApiError::Server { status: 502, message: "upstream rejected".into() };
        assert_eq!(e.to_string(), "HTTP 502: upstream rejected");
        assert_eq!(ApiError::Unavailable("network".into()).to_string(), "unavailable: network");
        assert!(!ApiError::NotFound.to_string().contains("NotFound"), "not the Debug form");
    }

    #[test]
    fn context_lines() {
        let ctx = |v: Value| ContextInfo::of(v.as_object().unwrap());
        let full = ctx(json!({"executionArn": "arn:aws:states:ap-northeast-1:123:execution:Deploy:run:1",
                              "stateName": "Approve", "requestedBy": "ci@example.com"}));
        assert_eq!(full.machine.as_deref(), Some("Deploy"));
        assert_eq!(full.execution.as_deref(), Some("run:1"));
        assert_eq!(full.source().as_deref(), Some("Deploy › Approve"));
        assert_eq!(full.requested_by.as_deref(), Some("ci@example.com"));
        let odd = ctx(json!({"executionArn": "not-an-arn", "requestedBy": ""}));
        assert_eq!(odd.source().as_deref(), Some("not-an-arn"));
        assert_eq!(odd.requested_by, None);
        assert_eq!(ctx(json!({})).source(), None);
    }
}
