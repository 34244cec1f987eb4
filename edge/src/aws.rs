//! SigV4-signed POSTs to AWS endpoints (Step Functions, SES, DynamoDB) through the Workers fetch API, and the plain
//! POST under them (chat webhooks use it too).

use ringi_core::adapters::sigv4::{sign_headers, unix_ms_to_system_time, AwsCredentials, SignOptions, SignRequest};
use ringi_core::config::Config;
use ringi_core::dev::latency::Remote;
use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit};

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

/// Sends `req` signed with the worker's configured credentials; returns the status and body text, or a transport
/// error. Counted as one round trip of this request (`probe`).
pub async fn signed_post(cfg: &Config, probe: &Probe, req: &AwsPost<'_>) -> Result<(u16, String), String> {
    let creds = cfg.aws_credentials.as_ref().ok_or("AWS credentials are not configured")?;
    // The table may live in another region than the workflows (`DYNAMODB_REGION`).
    let region = match (req.service, &cfg.storage) {
        (AwsService::DynamoDb, ringi_core::config::Storage::DynamoDb(d)) => d.region.as_str(),
        _ => cfg.aws_region.as_str(),
    };
    signed_post_as(creds, region, probe, req).await
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

/// One POST through the Workers fetch API: the status and body text, or a transport error (including no
/// answer within `timeout`). The error may name the URL: callers posting to a secret URL scrub it.
pub async fn post(url: &str, headers: &[(&str, &str)], body: &str, timeout: Duration) -> Result<(u16, String), String> {
    let all = Headers::new();
    for (k, v) in headers {
        all.set(k, v).map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(all).with_body(Some(body.into()));
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
