//! The OIDC issuer's discovery document, per isolate (`ringi_core::adapters::discovery::DiscoveryCache`): fetched when
//! first needed and then kept for an hour, so a warm isolate adds no round trip to the issuer (neither when
//! verifying a token nor when serving the SPA's configuration). The Cognito profile never needs it.

use std::cell::RefCell;
use std::time::Duration;

use ringi_core::adapters::discovery::{Discovery, DiscoveryCache, DiscoveryLookup};
use ringi_core::adapters::idp::IdpProfile;
use ringi_core::adapters::jwt::JwtError;
use ringi_core::config::Config;
use serde_json::json;

use crate::platform::{log, now_ms};

const FETCH_TIMEOUT: Duration = Duration::from_secs(3);

thread_local! {
    static DISCOVERY: RefCell<DiscoveryCache> = RefCell::new(DiscoveryCache::default());
}

/// The issuer's discovery document: cached, else fetched now (a stale copy if the fetch fails).
pub async fn document(cfg: &Config) -> Result<Discovery, String> {
    let now = now_ms();
    match DISCOVERY.with(|c| c.borrow().lookup(now)) {
        DiscoveryLookup::Use(d) => Ok(d),
        DiscoveryLookup::Unavailable => Err("discovery document unavailable (retried at most every 10 s)".into()),
        DiscoveryLookup::Fetch => {
            DISCOVERY.with(|c| c.borrow_mut().note_attempt(now));
            let url = Discovery::url(&cfg.issuer);
            match fetch(&url, &cfg.issuer).await {
                Ok(d) => {
                    DISCOVERY.with(|c| c.borrow_mut().store(d.clone(), now_ms()));
                    Ok(d)
                }
                Err(e) => {
                    log("warn", "discovery_fetch_failed", json!({"url": url, "error": e}));
                    DISCOVERY.with(|c| c.borrow().stale()).ok_or(e)
                }
            }
        }
    }
}

/// The cached document, if any, without fetching (for the CSP of a response that did not need it).
pub fn cached() -> Option<Discovery> {
    DISCOVERY.with(|c| c.borrow().peek().cloned())
}

/// Where the keys are: `JWKS_URL`, else the discovery document's `jwks_uri` (OIDC without `JWKS_URL`).
pub async fn jwks_url(cfg: &Config) -> Result<String, JwtError> {
    if let Some(u) = &cfg.jwks_url {
        return Ok(u.clone());
    }
    document(cfg).await.map(|d| d.jwks_uri).map_err(JwtError::JwksUnavailable)
}

/// The SPA's configuration; for OIDC with the discovered endpoints (`None` when the document is unavailable).
pub async fn spa_config(cfg: &Config) -> Option<ringi_core::api::wire::SpaConfig> {
    match cfg.profile {
        IdpProfile::Cognito => Some(cfg.spa_config(None)),
        IdpProfile::Oidc => document(cfg).await.ok().map(|d| cfg.spa_config(Some(&d))),
    }
}

async fn fetch(url: &str, issuer: &str) -> Result<Discovery, String> {
    // A redirect is not followed (a failed fetch): the document must be at the issuer's own address.
    Discovery::parse(&crate::platform::get_text(url, FETCH_TIMEOUT).await.map_err(|e| e.to_string())?, issuer)
}
