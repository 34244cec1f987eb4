//! The plain POST under every outgoing call (AWS, STS, chat webhooks): the Workers fetch API with a deadline.

use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit};

/// One POST through the Workers fetch API: the status and body text, or a transport error (including no
/// answer within `timeout`). The error may name the URL: callers posting to a secret URL scrub it.
pub async fn post(url: &str, headers: &[(&str, &str)], body: &str, timeout: Duration) -> Result<(u16, String), String> {
    post_bytes(url, headers, body.as_bytes(), timeout).await
}

/// [`post`] of a binary body (Web Push's encrypted record).
pub async fn post_bytes(
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, String), String> {
    let all = Headers::new();
    for (k, v) in headers {
        all.set(k, v).map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(all).with_body(Some(js_sys::Uint8Array::from(body).into()));
    let req = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = async move {
        let mut resp = Fetch::Request(req).send_with_signal(&signal).await.map_err(|e| e.to_string())?;
        let text = resp.text().await.map_err(|e| e.to_string())?;
        Ok((resp.status_code(), text))
    };
    match select(Box::pin(exchange), Box::pin(Delay::from(timeout))).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(_) => {
            controller.abort();
            Err(format!("no answer within {}s", timeout.as_secs()))
        }
    }
}
