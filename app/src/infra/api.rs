//! The worker's JSON API (design §2) over gloo-net, with the access token as bearer. Errors are keyed on
//! the stable `error.code` of `{"error":{"code","message","field"?}}` (ringi-core `ErrorBody`), read as
//! core's `ErrorCode`; every other string the worker defines (statuses, verdicts, `context` keys, the
//! field paths of a 400) is read through core's types too.

use gloo_net::http::{Request, RequestBuilder, Response};
#[cfg(feature = "admin")]
use ringi_core::api::audit_export::AuditPage;
use ringi_core::api::decision::DecisionRequest;
use ringi_core::api::wire::{ApprovalView, DecisionResponse, InboxPage};
use ringi_core::base::error::ErrorDetail;
use ringi_core::base::json::FromJson;
use ringi_core::base::principal::Principal;
use ringi_core::base::sign_in::SignInRequirement;
use ringi_core::domain::delegation::{DelegationView, OutOfOffice, OutOfOfficeAnswer};
use ringi_core::domain::inbox::InboxFilter;
use ringi_core::ErrorBody;
use ringi_sign_in::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::RequestCache;

use crate::infra::auth;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// No usable token, or the worker answered 401: sign in again.
    Unauthorized,
    /// 401 `step_up_required`: the approval asks for a fresher or stronger sign-in; sign in again asking the
    /// provider for it.
    StepUp(SignInRequirement),
    /// 404: unknown approval or not one of its approvers (deliberately the same).
    NotFound,
    /// 409: `already_decided`, `expired`, `in_progress`, `already_voted`, `already_satisfied`, and the 403
    /// `self_approval` (the code as
    /// sent: a newer worker may send one this build does not know; [`ErrorDetail::error_code`] reads it).
    Conflict(ErrorDetail),
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
            ApiError::StepUp(_) => f.write_str("HTTP 401: a fresh sign-in is required"),
            ApiError::NotFound => f.write_str("HTTP 404: not found"),
            ApiError::Conflict(e) => write!(f, "HTTP 409 {}: {}", e.code, e.message),
            ApiError::Invalid { field: Some(field), message } => write!(f, "{field}: {message}"),
            ApiError::Invalid { field: None, message } => f.write_str(message),
            ApiError::Unavailable(message) => write!(f, "unavailable: {message}"),
            ApiError::Server { status, message } => write!(f, "HTTP {status}: {message}"),
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

/// A 2xx answer's body read as `T`: by a [`FromJson`] reader of its own for what the approval page reads (serde's
/// derive would add its code to the module an emailed link downloads first), through serde for the rest.
fn decode<T: FromJson>(status: u16, text: &str) -> Result<T, ApiError> {
    json::from_str(text).map_err(|e| ApiError::Server { status, message: format!("unexpected response: {e}") })
}

/// The status and body of a 2xx answer, else the error it stands for. Apart from [`decode`] and not generic (as
/// [`send_text`]), so that the wasm has this code once rather than once per type read.
async fn success_text(response: Response) -> Result<(u16, String), ApiError> {
    let status = response.status();
    let text = response.text().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    answer(status, text)
}

/// A status and body already read: the body of a 2xx answer, else the error it stands for.
fn answer(status: u16, text: String) -> Result<(u16, String), ApiError> {
    if (200..300).contains(&status) {
        return Ok((status, text));
    }
    let error = json::from_str::<ErrorBody>(&text).map(|b| b.error).unwrap_or_else(|_| ErrorDetail {
        code: String::new(),
        message: format!("HTTP {status}"),
        field: None,
        require_sign_in: None,
    });
    Err(match status {
        401 => match error.require_sign_in {
            Some(needed) if error.error_code() == Some(ringi_core::base::error::ErrorCode::StepUpRequired) => {
                ApiError::StepUp(needed)
            }
            _ => ApiError::Unauthorized,
        },
        404 => ApiError::NotFound,
        // 409, and a 403 that names a rule (`delegate_is_requester`): explained by their code.
        409 => ApiError::Conflict(error),
        // Separation of duty: explained by its code like a 409 (the reloaded view shows why).
        403 if matches!(
            error.error_code(),
            Some(
                ringi_core::base::error::ErrorCode::SelfApproval
                    | ringi_core::base::error::ErrorCode::DelegateIsRequester
                    | ringi_core::base::error::ErrorCode::GroupSeat
            )
        ) =>
        {
            ApiError::Conflict(error)
        }
        400 | 413 => ApiError::Invalid { field: error.field, message: error.message },
        503 => ApiError::Unavailable(error.message),
        _ => ApiError::Server { status, message: error.message },
    })
}

async fn send<T: FromJson>(request: Request) -> Result<T, ApiError> {
    let (status, text) = send_text(request).await?;
    decode(status, &text)
}

async fn send_text(request: Request) -> Result<(u16, String), ApiError> {
    let response = request.send().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    success_text(response).await
}

fn encode(value: &str) -> String {
    String::from(js_sys::encode_uri_component(value))
}

/// `GET /api/v1/approvals?status=pending|decided&cursor=…`
pub async fn inbox(filter: InboxFilter, cursor: Option<&str>) -> Result<InboxPage, ApiError> {
    let mut url = format!("/api/v1/approvals?status={}", filter.as_str());
    if let Some(c) = cursor {
        url.push_str("&cursor=");
        url.push_str(&encode(c));
    }
    let request = with_auth(Request::get(&url))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send(request).await
}

/// The request `app/boot.js` already sent for this URL while the wasm was downloading, and its answer read
/// (`globalThis.ringiPrefetch = {url, answer}`, `answer` a promise of `{status, text}`), taken at most once.
fn take_prefetched(url: &str) -> Option<js_sys::Promise> {
    let global = js_sys::global();
    let key = JsValue::from_str("ringiPrefetch");
    let prefetch = js_sys::Reflect::get(&global, &key).ok().filter(|p| p.is_object())?;
    let _ = js_sys::Reflect::delete_property(&global, &key);
    let for_url = js_sys::Reflect::get(&prefetch, &JsValue::from_str("url")).ok()?.as_string()?;
    if for_url != url {
        return None;
    }
    js_sys::Reflect::get(&prefetch, &JsValue::from_str("answer")).ok()?.dyn_into().ok()
}

/// `GET /api/v1/approvals/{id}`
pub async fn approval(id: &str) -> Result<ApprovalView, ApiError> {
    let url = format!("/api/v1/approvals/{}", encode(id));
    if auth::bearer().is_none() {
        return Err(ApiError::Unauthorized);
    }
    if let Some(pending) = take_prefetched(&url) {
        // A network failure of the early request: ask again below.
        if let Some((status, text)) = JsFuture::from(pending).await.ok().and_then(|a| {
            let field = |name: &str| js_sys::Reflect::get(&a, &JsValue::from_str(name)).ok();
            Some((field("status")?.as_f64()? as u16, field("text")?.as_string()?))
        }) {
            let (status, text) = answer(status, text)?;
            return decode(status, &text);
        }
    }
    let request = with_auth(Request::get(&url))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send(request).await
}

/// `POST /api/v1/approvals/{id}/decision`
pub async fn decide(id: &str, body: &DecisionRequest) -> Result<DecisionResponse, ApiError> {
    let url = format!("/api/v1/approvals/{}/decision", encode(id));
    send_json(Request::post(&url), body).await
}

/// `POST /api/v1/approvals/{id}/delegation`
pub async fn delegate(id: &str, to: &Principal, note: Option<&str>) -> Result<DelegationView, ApiError> {
    let url = format!("/api/v1/approvals/{}/delegation", encode(id));
    let body = serde_json::json!({"to": to, "note": note});
    send_json(Request::post(&url), &body).await
}

const OUT_OF_OFFICE: &str = "/api/v1/me/out-of-office";

/// `GET /api/v1/me/out-of-office`
pub async fn out_of_office() -> Result<Option<OutOfOffice>, ApiError> {
    let request = with_auth(Request::get(OUT_OF_OFFICE))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send::<OutOfOfficeAnswer>(request).await.map(|a| a.out_of_office)
}

/// `PUT /api/v1/me/out-of-office`: `{delegate, from?, until, note?}`.
#[cfg(feature = "admin")]
pub async fn set_out_of_office(body: &serde_json::Value) -> Result<Option<OutOfOffice>, ApiError> {
    send_json::<OutOfOfficeAnswer, _>(Request::put(OUT_OF_OFFICE), body).await.map(|a| a.out_of_office)
}

/// `DELETE /api/v1/me/out-of-office`
#[cfg(feature = "admin")]
pub async fn clear_out_of_office() -> Result<(), ApiError> {
    let request =
        with_auth(Request::delete(OUT_OF_OFFICE))?.build().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send::<OutOfOfficeAnswer>(request).await.map(drop)
}

async fn send_json<T: FromJson, B: serde::Serialize + ?Sized>(
    builder: RequestBuilder,
    body: &B,
) -> Result<T, ApiError> {
    let request =
        with_auth(builder)?.json(body).map_err(|e| ApiError::Invalid { field: None, message: e.to_string() })?;
    send(request).await
}

/// `/api/v1/audit?from=…&to=…[&cursor=…][&limit=…]`; `from`/`to` RFC 3339.
#[cfg(feature = "admin")]
fn audit_url(from: &str, to: &str, cursor: Option<&str>, limit: Option<usize>) -> String {
    let mut url = format!("/api/v1/audit?from={}&to={}", encode(from), encode(to));
    if let Some(c) = cursor {
        url.push_str("&cursor=");
        url.push_str(&encode(c));
    }
    if let Some(l) = limit {
        url.push_str(&format!("&limit={l}"));
    }
    url
}

/// `GET /api/v1/audit` (operators): one page of the event log.
#[cfg(feature = "admin")]
pub async fn audit(from: &str, to: &str, cursor: Option<&str>) -> Result<AuditPage, ApiError> {
    let request = with_auth(Request::get(&audit_url(from, to, cursor, None)))?
        .build()
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    send(request).await
}

/// Pages one CSV download follows at most (of [`ringi_core::api::audit_export::PAGE_MAX`] events each).
#[cfg(feature = "admin")]
const CSV_PAGES_MAX: usize = 20;

/// The event log of a range as one CSV (`Accept: text/csv`): every page, following the next-cursor header,
/// with the header row once.
#[cfg(feature = "admin")]
pub async fn audit_csv(from: &str, to: &str) -> Result<String, ApiError> {
    let token = auth::bearer().ok_or(ApiError::Unauthorized)?;
    let mut csv = String::new();
    let mut cursor: Option<String> = None;
    for page in 0..CSV_PAGES_MAX {
        let url = audit_url(from, to, cursor.as_deref(), Some(ringi_core::api::audit_export::PAGE_MAX));
        let response = Request::get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Accept", "text/csv")
            .cache(RequestCache::NoStore)
            .send()
            .await
            .map_err(|e| ApiError::Unavailable(e.to_string()))?;
        if !(200..300).contains(&response.status()) {
            return Err(success_text(response)
                .await
                .err()
                .unwrap_or(ApiError::Server { status: 0, message: "unexpected response".into() }));
        }
        cursor = response.headers().get(ringi_core::api::audit_export::NEXT_CURSOR_HEADER);
        let text = response.text().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
        // Every page starts with the header row: keep the first one only.
        let body = if page == 0 { text.as_str() } else { text.split_once("\r\n").map_or("", |(_, rest)| rest) };
        csv.push_str(body);
        if cursor.is_none() {
            break;
        }
    }
    Ok(csv)
}

#[cfg(feature = "admin")]
const PUSH: &str = "/api/v1/me/push";

/// `PUT /api/v1/me/push`: this device's subscription (`PushSubscription.toJSON()` and `lang`).
#[cfg(feature = "admin")]
pub async fn push_subscribe(body: &serde_json::Value) -> Result<(), ApiError> {
    send_json::<serde_json::Value, _>(Request::put(PUSH), body).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_messages() {
        let e = ApiError::Server { status: 502, message: "upstream rejected".into() };
        assert_eq!(e.to_string(), "HTTP 502: upstream rejected");
        assert_eq!(ApiError::Unavailable("network".into()).to_string(), "unavailable: network");
        assert!(!ApiError::NotFound.to_string().contains("NotFound"), "not the Debug form");
        let conflict =
            ErrorDetail { code: "already_decided".into(), message: "m".into(), field: None, require_sign_in: None };
        assert_eq!(ApiError::Conflict(conflict).to_string(), "HTTP 409 already_decided: m");
    }
}
