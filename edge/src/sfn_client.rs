//! Delivers a decision to Step Functions: SigV4-signed JSON 1.0 POST with bounded, jittered retries.

use std::time::Duration;

use ringi_core::config::Config;
use ringi_core::sfn::{classify, CallbackOutcome, RetryPolicy, SfnCallback, JSON_CONTENT_TYPE};
use ringi_core::{ApprovalId, TaskToken};
use serde_json::json;
use worker::Delay;

use crate::aws::signed_post;
use crate::platform::{log, now_ms, random_unit};

/// Delivers `cb`. `expires_at` is the approval's expiry (≈ the task's TimeoutSeconds), used to read a
/// `TaskTimedOut` after an attempt whose fate is unknown.
pub async fn deliver(
    cfg: &Config,
    id: &ApprovalId,
    cb: &SfnCallback,
    token: &TaskToken,
    expires_at: i64,
) -> CallbackOutcome {
    if cfg.aws_credentials.is_none() {
        return CallbackOutcome::Refused("NoCredentialsConfigured".into());
    }
    // The same policy sets the floor of CLAIM_LEASE_SECONDS (config::min_claim_lease_secs): a stalled endpoint
    // cannot hold the claim past its lease.
    let policy = RetryPolicy::default();
    let attempt_timeout = Duration::from_millis(policy.attempt_timeout_ms);
    let url = format!("{}/", cfg.sfn_endpoint);
    let body = cb.body(token);
    let headers = [("content-type", JSON_CONTENT_TYPE), ("x-amz-target", cb.target())];
    let mut attempt = 1;
    // An attempt that timed out or got a 5xx may still have reached Step Functions.
    let mut maybe_delivered = false;
    loop {
        let outcome = match signed_post(cfg, &url, "states", &headers, &body, attempt_timeout).await {
            Ok((status, text)) => classify(status, &text),
            Err(e) => CallbackOutcome::Retryable(format!("network: {e}")),
        };
        log(
            "info",
            "sfn_callback",
            json!({"approvalId": id.as_str(), "target": cb.target(), "attempt": attempt, "outcome": format!("{outcome:?}")}),
        );
        match outcome {
            // We hold the claim, so nobody else answered this task: if an earlier attempt of ours may have
            // gone through and the task is not due to time out, "closed" means that attempt was delivered.
            CallbackOutcome::TaskClosed(code) if maybe_delivered && now_ms() < expires_at - 5_000 => {
                log("warn", "sfn_callback_presumed_delivered", json!({"approvalId": id.as_str(), "code": code}));
                return CallbackOutcome::Delivered;
            }
            CallbackOutcome::Retryable(code) if attempt < policy.max_attempts => {
                maybe_delivered |= !code.contains("Throttl");
                Delay::from(Duration::from_millis(policy.backoff_ms(attempt, random_unit()))).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}
