//! Delivers a decision to Step Functions: SigV4-signed JSON 1.0 POST with bounded, jittered retries.

use std::time::Duration;

use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::adapters::federation::expired_credentials;
use ringi_core::adapters::sfn::{classify, CallbackOutcome, RetryPolicy, JSON_CONTENT_TYPE};
use ringi_core::config::Config;
use ringi_core::domain::callback::SfnCallback;
use ringi_core::{ApprovalId, TaskToken};
use serde_json::json;
use worker::Delay;

use crate::aws::{signed_post_as, AwsPost, AwsService};
use crate::federation::{credentials, forget};
use crate::platform::{log, random_unit};
use crate::probe::Probe;

/// What came of delivering a callback: the last answer, and whether any try may have reached Step
/// Functions although it did not say 200 (a timeout, a reset connection, a 5xx: the request may have been
/// processed). Throttling and refusals are answers to a request Step Functions did not act on.
#[derive(Debug)]
pub struct Delivery {
    pub outcome: CallbackOutcome,
    pub maybe_delivered: bool,
}

/// Delivers `cb` with bounded, jittered retries. It never presumes anything: "task closed" after an
/// ambiguous try is reported as such, with `maybe_delivered`, and the caller records it as unconfirmed.
/// The callback goes to `target`'s region (`None`: `AWS_REGION`), signed with that account's temporary
/// credentials under federation, else with the static key.
pub async fn deliver(
    cfg: &Config,
    probe: &Probe,
    id: &ApprovalId,
    cb: &SfnCallback,
    token: &TaskToken,
    target: Option<&AwsTarget>,
) -> Delivery {
    let region = cfg.callback_region(target);
    // The same policy sets the floor of CLAIM_LEASE_SECONDS (config::min_claim_lease_secs): a stalled endpoint
    // cannot hold the claim past its lease.
    let policy = RetryPolicy::default();
    let attempt_timeout = Duration::from_millis(policy.attempt_timeout_ms);
    let url = cfg.sfn_url(region);
    let body = cb.body(token);
    let headers = [("content-type", JSON_CONTENT_TYPE), ("x-amz-target", cb.target())];
    let mut attempt = 1;
    let mut maybe_delivered = false;
    let mut renewed = false;
    loop {
        let outcome = match credentials(cfg, target, attempt_timeout).await {
            Err(none) => none,
            Ok(creds) => {
                let req = AwsPost {
                    url: &url,
                    service: AwsService::StepFunctions,
                    headers: &headers,
                    body: &body,
                    timeout: attempt_timeout,
                };
                let sent = signed_post_as(&creds, region, probe, &req);
                match sent.await {
                    Ok((status, text)) => classify(status, &text),
                    Err(e) => CallbackOutcome::Retryable(format!("network: {e}")),
                }
            }
        };
        log(
            "info",
            "sfn_callback",
            json!({"approvalId": id.as_str(), "target": cb.target(), "region": region,
                   "account": target.map(|t| t.account.as_str()), "attempt": attempt, "outcome": format!("{outcome:?}")}),
        );
        match outcome {
            // Temporary credentials that ran out before their recorded expiry (a clock apart): new ones, once.
            CallbackOutcome::Refused(code)
                if cfg.federation.is_some()
                    && expired_credentials(&code)
                    && !renewed
                    && attempt < policy.max_attempts =>
            {
                forget(cfg, target);
                renewed = true;
                attempt += 1;
            }
            CallbackOutcome::Retryable(code) if attempt < policy.max_attempts => {
                maybe_delivered |= !code.contains("Throttl");
                Delay::from(Duration::from_millis(policy.backoff_ms(attempt, random_unit()))).await;
                attempt += 1;
            }
            CallbackOutcome::Retryable(code) => {
                maybe_delivered |= !code.contains("Throttl");
                return Delivery { outcome: CallbackOutcome::Retryable(code), maybe_delivered };
            }
            other => return Delivery { outcome: other, maybe_delivered },
        }
    }
}
