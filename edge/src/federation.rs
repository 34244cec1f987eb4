//! The worker's AWS credentials: with federation (`SIGNING_KEY` and no access key), temporary credentials of a role —
//! the target account's for a callback, the worker's own (`AWS_ROLE_ARN`) for mail and DynamoDB — from
//! `sts:AssumeRoleWithWebIdentity` with a JWT the worker signs itself (WebCrypto ECDSA P-256), cached per isolate
//! and role until shortly before they expire; without it, the static access key.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use futures_util::future::{FutureExt, LocalBoxFuture, Shared};
use ringi_core::adapters::aws_target::{AccountId, AwsTarget, RoleArn};
use ringi_core::adapters::federation::{self, Federation, Purpose, SessionCredentials};
use ringi_core::adapters::keyring::KeyRing;
use ringi_core::adapters::sfn::{error_code, CallbackOutcome};
use ringi_core::adapters::sigv4::AwsCredentials;
use ringi_core::config::Config;
use serde_json::json;

use crate::fetch::post;
use crate::platform::{log, now_ms, random_bytes};

thread_local! {
    /// Temporary credentials per role ARN, for this isolate's lifetime (or until shortly before they expire).
    static SESSIONS: RefCell<HashMap<String, SessionCredentials>> = RefCell::new(HashMap::new());
    /// The STS call under way per role ARN, shared by every request that needs that role meanwhile.
    static INFLIGHT: RefCell<HashMap<String, Flight>> = RefCell::new(HashMap::new());
}

type Flight = Shared<LocalBoxFuture<'static, Result<SessionCredentials, CallbackOutcome>>>;

/// A role to assume, and what the token shown for it says: the purpose and account its trust policy checks.
struct Assume<'a> {
    role: &'a RoleArn,
    account: &'a AccountId,
    purpose: Purpose,
    /// Where STS is asked (the region the credentials are for).
    region: &'a str,
}

/// The credentials a callback to `target` is signed with, or why there are none (an outcome the caller
/// reports like Step Functions' own). `timeout`: for the STS call.
pub async fn credentials(
    cfg: &Config,
    target: Option<&AwsTarget>,
    timeout: Duration,
) -> Result<AwsCredentials, CallbackOutcome> {
    let (Some(fed), Some(target)) = (&cfg.federation, target) else {
        return cfg.aws_credentials.clone().ok_or_else(|| CallbackOutcome::Refused("NoCredentialsConfigured".into()));
    };
    let role = callback_role(cfg, target).ok_or_else(|| CallbackOutcome::Refused("NoRoleConfigured".into()))?;
    let purpose = Purpose::Callback;
    assume(cfg, fed, &Assume { role, account: &target.account, purpose, region: target.region.as_str() }, timeout).await
}

/// The credentials of the worker's own calls (mail, the DynamoDB table): its own role's under federation
/// (`AWS_ROLE_ARN`), else the access key.
pub async fn own_credentials(cfg: &Config, timeout: Duration) -> Result<AwsCredentials, String> {
    match (&cfg.federation, &cfg.aws_role) {
        (Some(fed), Some(own)) => {
            let a = Assume { role: &own.arn, account: &own.account, purpose: Purpose::Worker, region: &cfg.aws_region };
            assume(cfg, fed, &a, timeout).await.map_err(|o| format!("the worker's role: {o:?}"))
        }
        _ => cfg.aws_credentials.clone().ok_or_else(|| "AWS credentials are not configured".into()),
    }
}

fn callback_role<'a>(cfg: &'a Config, target: &AwsTarget) -> Option<&'a RoleArn> {
    cfg.aws_targets.account(&target.account).and_then(|a| a.role_arn.as_ref())
}

/// Temporary credentials of `a.role`: cached, else from `sts:AssumeRoleWithWebIdentity` with a token the worker
/// signs for `a.purpose` in `a.account`. Requests that need the same role at once share one STS call.
async fn assume(
    cfg: &Config,
    fed: &Federation,
    a: &Assume<'_>,
    timeout: Duration,
) -> Result<AwsCredentials, CallbackOutcome> {
    let role = a.role.as_str().to_owned();
    if let Some(s) = SESSIONS.with(|c| c.borrow().get(&role).filter(|s| s.fresh(now_ms())).cloned()) {
        return Ok(s.credentials);
    }
    let flight = match INFLIGHT.with(|f| f.borrow().get(&role).cloned()) {
        Some(running) => running,
        None => {
            let Some(ring) = cfg.keys.clone() else {
                return Err(CallbackOutcome::Refused("federation without a key ring".into()));
            };
            let call = Call {
                fed: fed.clone(),
                ring,
                issuer: cfg.issuer_url().to_owned(),
                role: role.clone(),
                account: a.account.clone(),
                purpose: a.purpose,
                region: a.region.to_owned(),
            };
            let running = call.run(timeout).boxed_local().shared();
            INFLIGHT.with(|f| f.borrow_mut().insert(role.clone(), running.clone()));
            running
        }
    };
    let outcome = flight.clone().await;
    INFLIGHT.with(|f| {
        let mut f = f.borrow_mut();
        // Only this call's entry: a later one for the same role may have started since.
        if f.get(&role).is_some_and(|r| r.ptr_eq(&flight)) {
            f.remove(&role);
        }
    });
    let session = outcome?;
    let creds = session.credentials.clone();
    SESSIONS.with(|c| c.borrow_mut().insert(role, session));
    Ok(creds)
}

/// One AssumeRoleWithWebIdentity call, owning what it needs (it may outlive the request that started it).
struct Call {
    fed: Federation,
    ring: KeyRing,
    issuer: String,
    role: String,
    account: AccountId,
    purpose: Purpose,
    region: String,
}

impl Call {
    async fn run(self, timeout: Duration) -> Result<SessionCredentials, CallbackOutcome> {
        let (role, account) = (self.role.as_str(), self.account.as_str());
        let token = sign(&self.ring, &self.fed, &self.issuer, self.purpose, &self.account)
            .await
            .map_err(CallbackOutcome::Refused)?;
        let session_name = format!("ringi-{}", URL_SAFE_NO_PAD.encode(random_bytes::<9>()));
        let body = federation::assume_role_body(role, &session_name, &token);
        let headers = [("content-type", "application/x-www-form-urlencoded; charset=utf-8")];
        let (status, text) = post(&self.fed.sts_url(&self.region), &headers, &body, timeout)
            .await
            .map_err(|e| CallbackOutcome::Retryable(format!("sts network: {e}")))?;
        if !(200..300).contains(&status) {
            let code = error_code(&text).unwrap_or_else(|| format!("HTTP{status}"));
            log("warn", "sts_refused", json!({"account": account, "role": role, "code": code}));
            return Err(if status >= 500 || status == 429 || federation::sts_retryable(&code) {
                CallbackOutcome::Retryable(format!("sts: {code}"))
            } else {
                CallbackOutcome::Refused(format!("sts: {code}"))
            });
        }
        let session = federation::parse_assume_role_response(&text).map_err(CallbackOutcome::Retryable)?;
        log(
            "info",
            "sts_assumed_role",
            json!({"account": account, "role": role, "session": session_name, "status": status}),
        );
        Ok(session)
    }
}

/// Drops the cached credentials of `target`'s role (Step Functions said they expired).
pub fn forget(cfg: &Config, target: Option<&AwsTarget>) {
    if let Some(role) = target.and_then(|t| callback_role(cfg, t)) {
        SESSIONS.with(|c| c.borrow_mut().remove(role.as_str()));
    }
}

/// Drops the cached credentials of the worker's own role (SES or DynamoDB said they expired).
pub fn forget_own(cfg: &Config) {
    if let Some(own) = &cfg.aws_role {
        SESSIONS.with(|c| c.borrow_mut().remove(own.arn.as_str()));
    }
}

/// A JWT for `purpose` in `account`, signed with the key ring.
async fn sign(
    ring: &KeyRing,
    fed: &Federation,
    issuer: &str,
    purpose: Purpose,
    account: &AccountId,
) -> Result<String, String> {
    let jti = URL_SAFE_NO_PAD.encode(random_bytes::<12>());
    let claims = fed.claims(issuer, purpose, account, now_ms() / 1000, &jti);
    crate::keys::sign(ring, "JWT", &claims).await
}
