//! SigV4-signed POSTs to AWS endpoints (Step Functions, SES) through the Workers fetch API.

use ringi_core::config::Config;
use ringi_core::sigv4::{sign_headers, unix_ms_to_system_time, SignOptions, SignRequest};
use worker::{Fetch, Headers, Method, Request, RequestInit};

use crate::platform::now_ms;

/// Sends `body` signed for `service`; returns the status and body text, or a transport error.
pub async fn signed_post(
    cfg: &Config,
    url: &str,
    service: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String), String> {
    let creds = cfg.aws_credentials.as_ref().ok_or("AWS credentials are not configured")?;
    let signed = sign_headers(
        &SignRequest {
            method: "POST",
            url,
            headers,
            body: body.as_bytes(),
            region: &cfg.aws_region,
            service,
            time: unix_ms_to_system_time(now_ms()),
        },
        creds,
        SignOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let all = Headers::new();
    for (k, v) in headers.iter().copied().chain(signed.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        all.set(k, v).map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(all).with_body(Some(body.into()));
    let req = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    let mut resp = Fetch::Request(req).send().await.map_err(|e| e.to_string())?;
    let text = resp.text().await.unwrap_or_default();
    Ok((resp.status_code(), text))
}
