//! Delivers a decision to Step Functions: SigV4-signed JSON 1.0 POST with bounded, jittered retries.

use std::time::Duration;

use ringi_core::config::Config;
use ringi_core::sfn::{classify, CallbackOutcome, RetryPolicy, SfnCallback, JSON_CONTENT_TYPE};
use ringi_core::sigv4::{sign_headers, unix_ms_to_system_time, SignOptions, SignRequest};
use ringi_core::{ApprovalId, TaskToken};
use serde_json::json;
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit};

use crate::platform::{log, now_ms, random_unit};

pub async fn deliver(cfg: &Config, id: &ApprovalId, cb: &SfnCallback, token: &TaskToken) -> CallbackOutcome {
    let Some(creds) = cfg.aws_credentials.as_ref() else {
        return CallbackOutcome::Refused("NoCredentialsConfigured".into());
    };
    let policy = RetryPolicy::default();
    let url = format!("{}/", cfg.sfn_endpoint);
    let body = cb.body(token);
    let mut attempt = 1;
    loop {
        let outcome = match send(cfg, creds, &url, cb.target(), &body).await {
            Ok((status, text)) => classify(status, &text),
            Err(e) => CallbackOutcome::Retryable(format!("network: {e}")),
        };
        log(
            "info",
            "sfn_callback",
            json!({"approvalId": id.as_str(), "target": cb.target(), "attempt": attempt, "outcome": format!("{outcome:?}")}),
        );
        match outcome {
            CallbackOutcome::Retryable(_) if attempt < policy.max_attempts => {
                Delay::from(Duration::from_millis(policy.backoff_ms(attempt, random_unit()))).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn send(
    cfg: &Config,
    creds: &ringi_core::sigv4::AwsCredentials,
    url: &str,
    target: &str,
    body: &str,
) -> Result<(u16, String), String> {
    let base = [("content-type", JSON_CONTENT_TYPE), ("x-amz-target", target)];
    let signed = sign_headers(
        &SignRequest {
            method: "POST",
            url,
            headers: &base,
            body: body.as_bytes(),
            region: &cfg.aws_region,
            service: "states",
            time: unix_ms_to_system_time(now_ms()),
        },
        creds,
        SignOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let headers = Headers::new();
    for (k, v) in base.iter().map(|(k, v)| (*k, *v)).chain(signed.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        headers.set(k, v).map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(headers).with_body(Some(body.into()));
    let req = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    let mut resp = Fetch::Request(req).send().await.map_err(|e| e.to_string())?;
    let text = resp.text().await.unwrap_or_default();
    Ok((resp.status_code(), text))
}
