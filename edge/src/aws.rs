//! SigV4-signed POSTs to AWS endpoints (Step Functions, SES, DynamoDB) through the Workers fetch API: the worker's
//! own calls (SES, DynamoDB) signed with its own role's temporary credentials under federation, else the access key.

use ringi_core::adapters::sigv4::{sign_headers, unix_ms_to_system_time, AwsCredentials, SignOptions, SignRequest};
use ringi_core::config::Config;
use ringi_core::dev::latency::Remote;
use std::time::Duration;

use ringi_core::adapters::federation::expired_credentials;
use ringi_core::adapters::sfn::error_code;

use crate::federation::{forget_own, own_credentials};
use crate::fetch::post;
use crate::platform::wall_ms;
use crate::probe::Probe;

/// Mail goes out after the response, where nobody waits: a slow SES gets longer, and an answer that comes
/// late is still an answer (no resend). Stays well inside the 30 s a worker may run after responding.
pub const MAIL_TIMEOUT: Duration = Duration::from_secs(20);

/// The AWS services the worker calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsService {
    StepFunctions,
    Ses,
    DynamoDb,
}

impl AwsService {
    /// The SigV4 signing name.
    fn signing_name(self) -> &'static str {
        match self {
            Self::StepFunctions => "states",
            Self::Ses => "ses",
            Self::DynamoDb => "dynamodb",
        }
    }

    fn remote(self) -> Remote {
        match self {
            Self::StepFunctions => Remote::StepFunctions,
            Self::Ses => Remote::Ses,
            Self::DynamoDb => Remote::DynamoDb,
        }
    }
}

/// One signed POST to an AWS service.
pub struct AwsPost<'a> {
    pub url: &'a str,
    pub service: AwsService,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a str,
    /// No answer within it is a transport error.
    pub timeout: Duration,
}

/// Sends `req` signed with the worker's own credentials (its role's under federation, else the access key);
/// returns the status and body text, or a transport error. Counted as one round trip of this request (`probe`).
/// A session AWS finds expired (a clock apart from ours) is renewed once: the refused request did nothing.
pub async fn signed_post(cfg: &Config, probe: &Probe, req: &AwsPost<'_>) -> Result<(u16, String), String> {
    // The table may live in another region than the workflows (`DYNAMODB_REGION`).
    let region = match (req.service, &cfg.storage) {
        (AwsService::DynamoDb, ringi_core::config::Storage::DynamoDb(d)) => d.region.as_str(),
        _ => cfg.aws_region.as_str(),
    };
    let mut renewed = false;
    loop {
        let creds = own_credentials(cfg, req.timeout).await?;
        let (status, text) = signed_post_as(&creds, region, probe, req).await?;
        let expired = matches!(status, 400 | 403) && error_code(&text).is_some_and(|c| expired_credentials(&c));
        if !expired || renewed || cfg.aws_role.is_none() {
            return Ok((status, text));
        }
        forget_own(cfg);
        renewed = true;
    }
}

/// [`signed_post`] with the given credentials, signed for `region` (a callback's target's).
pub async fn signed_post_as(
    creds: &AwsCredentials,
    region: &str,
    probe: &Probe,
    req: &AwsPost<'_>,
) -> Result<(u16, String), String> {
    let signed = sign_headers(
        &SignRequest {
            method: "POST",
            url: req.url,
            headers: req.headers,
            body: req.body.as_bytes(),
            region,
            service: req.service.signing_name(),
            time: unix_ms_to_system_time(wall_ms()),
        },
        creds,
        SignOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let all: Vec<(&str, &str)> =
        req.headers.iter().copied().chain(signed.iter().map(|(k, v)| (k.as_str(), v.as_str()))).collect();
    probe.before_round_trip(req.service.remote()).await;
    post(req.url, &all, req.body, req.timeout).await
}
