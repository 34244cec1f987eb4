//! Delivers a decision to Step Functions: SigV4-signed JSON 1.0 POST with bounded, jittered retries.

use std::time::Duration;

use ringi_core::config::Config;
use ringi_core::sfn::{classify, CallbackOutcome, RetryPolicy, SfnCallback, JSON_CONTENT_TYPE};
use ringi_core::{ApprovalId, TaskToken};
use serde_json::json;
use worker::Delay;

use crate::aws::signed_post;
use crate::platform::{log, random_unit};

pub async fn deliver(cfg: &Config, id: &ApprovalId, cb: &SfnCallback, token: &TaskToken) -> CallbackOutcome {
    if cfg.aws_credentials.is_none() {
        return CallbackOutcome::Refused("NoCredentialsConfigured".into());
    }
    let policy = RetryPolicy::default();
    let url = format!("{}/", cfg.sfn_endpoint);
    let body = cb.body(token);
    let headers = [("content-type", JSON_CONTENT_TYPE), ("x-amz-target", cb.target())];
    let mut attempt = 1;
    loop {
        let outcome = match signed_post(cfg, &url, "states", &headers, &body).await {
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
