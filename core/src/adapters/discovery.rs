//! OpenID Connect discovery (`{OIDC_ISSUER}/.well-known/openid-configuration`) for the generic provider
//! profile: the document's shape and checks, and its per-isolate cache. Cached like the JWKS (an hour, a
//! failed or refused fetch retried at most every 10 s, a stale document kept while the issuer cannot be
//! reached), so a warm isolate verifies a token with no round trip to the issuer at all.

use serde::Deserialize;

#[cfg(test)]
use crate::adapters::jwks::JWKS_MIN_REFETCH_MS;
use crate::adapters::jwks::{recent, JWKS_MAX_AGE_MS};

/// The members ringi uses; the rest of the document is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub jwks_uri: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    /// RP-initiated logout; absent: signing out ends only ringi's session in the tab.
    #[serde(default)]
    pub end_session_endpoint: Option<String>,
}

impl Discovery {
    /// The document as the configured issuer published it: `issuer` exactly the configured one (OpenID
    /// Connect Discovery §4.3: otherwise a document of another issuer could name its keys), every endpoint
    /// an `https://` URL (`http://` only on loopback, as for the configuration itself).
    pub fn parse(body: &str, issuer: &str) -> Result<Self, String> {
        let doc: Self = serde_json::from_str(body).map_err(|e| format!("not a discovery document: {e}"))?;
        if doc.issuer != issuer {
            return Err(format!("its issuer {:?} is not the configured OIDC_ISSUER", doc.issuer));
        }
        for (name, url) in [
            ("jwks_uri", Some(&doc.jwks_uri)),
            ("authorization_endpoint", Some(&doc.authorization_endpoint)),
            ("token_endpoint", Some(&doc.token_endpoint)),
            ("end_session_endpoint", doc.end_session_endpoint.as_ref()),
        ] {
            if let Some(url) = url {
                crate::base::text::check_url(url).map_err(|m| format!("configuration {name} is invalid: {m}"))?;
            }
        }
        Ok(doc)
    }

    /// Where the document of `issuer` is.
    pub fn url(issuer: &str) -> String {
        format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'))
    }
}

/// Why a GET of one of the issuer's documents (the discovery document, the JWKS) failed. A redirect is not
/// followed: the configured (or discovered) URL is the one place the keys come from, and a redirect could send
/// the fetch anywhere (another host, plain http).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdpFetchError {
    /// A 3xx answer, not followed.
    Redirect { status: u16 },
    /// Any other answer than 200.
    Status(u16),
    /// No answer within this many seconds (the fetch was aborted).
    Timeout { secs: u64 },
    /// The fetch itself failed (connection refused or reset, bad URL, an unreadable body).
    Network(String),
}

impl IdpFetchError {
    /// What an answer's status means: `None` for 200 (its body is the document).
    pub fn from_status(status: u16) -> Option<Self> {
        match status {
            200 => None,
            300..=399 => Some(Self::Redirect { status }),
            _ => Some(Self::Status(status)),
        }
    }
}

impl std::fmt::Display for IdpFetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Redirect { status } => write!(f, "HTTP {status}: a redirect, not followed"),
            Self::Status(status) => write!(f, "HTTP {status}"),
            Self::Timeout { secs } => write!(f, "no answer within {secs}s"),
            Self::Network(e) => f.write_str(e),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryLookup {
    /// Use this document (fresh, or stale while the issuer was asked less than 10 s ago).
    Use(Discovery),
    /// Fetch it now, [`DiscoveryCache::store`] it; on failure use the stale one if there is one.
    Fetch,
    /// None known and the last attempt was less than 10 s ago.
    Unavailable,
}

#[derive(Debug, Clone, Default)]
pub struct DiscoveryCache {
    doc: Option<Discovery>,
    fetched_at: i64,
    last_attempt: Option<i64>,
}

impl DiscoveryCache {
    pub fn lookup(&self, now_ms: i64) -> DiscoveryLookup {
        let recent_attempt = self.last_attempt.is_some_and(|t| recent(now_ms, t));
        match &self.doc {
            Some(d) if now_ms - self.fetched_at < JWKS_MAX_AGE_MS || recent_attempt => DiscoveryLookup::Use(d.clone()),
            _ if recent_attempt => DiscoveryLookup::Unavailable,
            _ => DiscoveryLookup::Fetch,
        }
    }

    /// The document if one is known, however old, without asking for a fetch (the CSP's origins).
    pub fn peek(&self) -> Option<&Discovery> {
        self.doc.as_ref()
    }

    /// Record a fetch attempt before it is made (failed fetches count against the rate limit too).
    pub fn note_attempt(&mut self, now_ms: i64) {
        self.last_attempt = Some(now_ms);
    }

    pub fn store(&mut self, doc: Discovery, now_ms: i64) {
        self.doc = Some(doc);
        self.fetched_at = now_ms;
    }

    /// After a failed fetch: the stale document, if any.
    pub fn stale(&self) -> Option<Discovery> {
        self.doc.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISS: &str = "https://login.example.com/tenant/v2.0";

    fn body(issuer: &str, jwks: &str) -> String {
        serde_json::json!({
            "issuer": issuer, "jwks_uri": jwks,
            "authorization_endpoint": "https://login.example.com/tenant/oauth2/v2.0/authorize",
            "token_endpoint": "https://login.example.com/tenant/oauth2/v2.0/token",
            "end_session_endpoint": "https://login.example.com/tenant/oauth2/v2.0/logout",
            "response_types_supported": ["code"], "scopes_supported": ["openid"]
        })
        .to_string()
    }

    #[test]
    fn document_must_be_the_configured_issuers() {
        let d = Discovery::parse(&body(ISS, "https://login.example.com/tenant/discovery/v2.0/keys"), ISS).unwrap();
        assert_eq!(d.jwks_uri, "https://login.example.com/tenant/discovery/v2.0/keys");
        assert_eq!(d.end_session_endpoint.as_deref(), Some("https://login.example.com/tenant/oauth2/v2.0/logout"));
        let other = Discovery::parse(&body("https://evil.example/v2.0", "https://evil.example/keys"), ISS);
        assert!(other.unwrap_err().contains("not the configured OIDC_ISSUER"));
        assert!(Discovery::parse(&body(&format!("{ISS}/"), "https://x/keys"), ISS).is_err(), "exact issuer");
        assert!(Discovery::parse(&body(ISS, "http://evil.example/keys"), ISS).is_err(), "plain http JWKS");
        assert!(Discovery::parse("{}", ISS).is_err());
        assert!(Discovery::parse("<html>", ISS).is_err());
        let loopback = "http://127.0.0.1:9000/t/v2.0";
        assert!(Discovery::parse(&body(loopback, "http://127.0.0.1:9000/keys"), loopback).is_ok());
        let no_logout = serde_json::json!({"issuer": ISS, "jwks_uri": "https://k", "authorization_endpoint": "https://a",
                                           "token_endpoint": "https://t"});
        assert_eq!(Discovery::parse(&no_logout.to_string(), ISS).unwrap().end_session_endpoint, None);
        assert_eq!(Discovery::url("https://i/x/"), "https://i/x/.well-known/openid-configuration");
    }

    #[test]
    fn cached_for_an_hour_and_refetched_at_most_every_10s() {
        let d = Discovery::parse(&body(ISS, "https://k/keys"), ISS).unwrap();
        let mut c = DiscoveryCache::default();
        assert_eq!(c.lookup(0), DiscoveryLookup::Fetch);
        c.note_attempt(0);
        assert_eq!(c.lookup(5_000), DiscoveryLookup::Unavailable, "a failed fetch is not retried at once");
        assert_eq!(c.lookup(JWKS_MIN_REFETCH_MS), DiscoveryLookup::Fetch);
        c.note_attempt(JWKS_MIN_REFETCH_MS);
        c.store(d.clone(), JWKS_MIN_REFETCH_MS);
        assert_eq!(c.lookup(JWKS_MIN_REFETCH_MS + 1), DiscoveryLookup::Use(d.clone()));
        let later = JWKS_MIN_REFETCH_MS + JWKS_MAX_AGE_MS;
        assert_eq!(c.lookup(later), DiscoveryLookup::Fetch, "refreshed after an hour");
        c.note_attempt(later);
        // The refresh failed: the stale document is used, not refetched on every request.
        assert_eq!(c.lookup(later + 1), DiscoveryLookup::Use(d.clone()));
        assert_eq!(c.stale(), Some(d.clone()));
        assert_eq!(c.peek(), Some(&d));
    }

    #[test]
    fn a_redirect_is_a_failure_of_its_own_never_a_document() {
        assert_eq!(IdpFetchError::from_status(200), None);
        for status in [301, 302, 303, 307, 308] {
            let e = IdpFetchError::from_status(status).unwrap();
            assert_eq!(e, IdpFetchError::Redirect { status });
            assert!(e.to_string().contains("not followed"), "{e}");
        }
        assert_eq!(IdpFetchError::from_status(304), Some(IdpFetchError::Redirect { status: 304 }));
        assert_eq!(IdpFetchError::from_status(404), Some(IdpFetchError::Status(404)));
        assert_eq!(IdpFetchError::from_status(204), Some(IdpFetchError::Status(204)));
    }
}
