//! The worker's typed configuration (design.md §7), parsed once from wrangler vars and secrets.

use crate::jwt::{JwtRules, TokenUse};
use crate::sigv4::AwsCredentials;
use crate::storage::D1Faults;
use crate::wire::SpaConfig;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration {0} is required")]
    Missing(&'static str),
    #[error("configuration {0} is invalid: {1}")]
    Invalid(&'static str, String),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub public_base_url: String,
    pub issuer: String,
    pub jwks_url: String,
    pub client_id: String,
    pub token_use: TokenUse,
    pub cognito_domain: String,
    pub register_scope: String,
    pub register_client_ids: Vec<String>,
    /// Lower-case hex SHA-256 digests of accepted registration API keys.
    pub register_api_key_hashes: Vec<String>,
    pub aws_region: String,
    pub aws_credentials: Option<AwsCredentials>,
    pub sfn_endpoint: String,
    pub ses_endpoint: String,
    pub mail_from: Option<String>,
    pub claim_lease_ms: i64,
    /// Send one reminder when this little time is left.
    pub reminder_window_ms: i64,
    /// Closed approvals (and their audit trail) are purged this long after the decision.
    pub retention_ms: i64,
    pub default_locale: String,
    pub version: String,
    /// Dev/bench only (`D1_FAULTS`): makes chosen D1 calls fail. Refused unless `PUBLIC_BASE_URL` is a
    /// loopback origin, so a production config cannot carry it.
    pub d1_faults: D1Faults,
}

/// `http(s)://127.x.x.x`, `localhost` or `[::1]`, any port.
pub fn is_loopback_origin(url: &str) -> bool {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).unwrap_or("");
    let host_port = rest.split('/').next().unwrap_or("");
    let host =
        if host_port.starts_with("[::1]") { "[::1]" } else { host_port.rsplit_once(':').map_or(host_port, |(h, _)| h) };
    host == "localhost" || host == "[::1]" || (host.starts_with("127.") && host.split('.').count() == 4)
}

fn list(v: Option<String>) -> Vec<String> {
    v.unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn url(name: &'static str, v: String) -> Result<String, ConfigError> {
    if v.starts_with("https://") || v.starts_with("http://") {
        Ok(v.trim_end_matches('/').to_owned())
    } else {
        Err(ConfigError::Invalid(name, "must be an http(s) URL".into()))
    }
}

impl Config {
    /// `get` reads one variable (empty strings count as unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let opt = |name: &str| get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let req = |name: &'static str| opt(name).ok_or(ConfigError::Missing(name));
        let public_base_url = url("PUBLIC_BASE_URL", req("PUBLIC_BASE_URL")?)?;
        let issuer = req("COGNITO_ISSUER")?;
        let jwks_url = match opt("JWKS_URL") {
            Some(u) => url("JWKS_URL", u)?,
            None => format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/')),
        };
        let client_id = req("COGNITO_CLIENT_ID")?;
        let token_use = match opt("TOKEN_USE") {
            None => TokenUse::Access,
            Some(t) => {
                TokenUse::parse(&t).ok_or_else(|| ConfigError::Invalid("TOKEN_USE", "must be id or access".into()))?
            }
        };
        let cognito_domain = opt("COGNITO_DOMAIN").map(|d| url("COGNITO_DOMAIN", d)).transpose()?.unwrap_or_default();
        let register_client_ids = match list(opt("REGISTER_CLIENT_IDS")) {
            ids if ids.is_empty() => vec![client_id.clone()],
            ids => ids,
        };
        let register_api_key_hashes =
            list(opt("REGISTER_API_KEYS")).into_iter().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>();
        if let Some(bad) =
            register_api_key_hashes.iter().find(|h| h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(ConfigError::Invalid(
                "REGISTER_API_KEYS",
                format!("entry of length {} is not a SHA-256 hex digest", bad.len()),
            ));
        }
        let aws_region = opt("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
        let aws_credentials = match (opt("AWS_ACCESS_KEY_ID"), opt("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                Some(AwsCredentials { access_key_id, secret_access_key, session_token: opt("AWS_SESSION_TOKEN") })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid(
                    "AWS_ACCESS_KEY_ID",
                    "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
                ))
            }
        };
        let sfn_endpoint = match opt("SFN_ENDPOINT") {
            Some(u) => url("SFN_ENDPOINT", u)?,
            None => format!("https://states.{aws_region}.amazonaws.com"),
        };
        let ses_endpoint = match opt("SES_ENDPOINT") {
            Some(u) => url("SES_ENDPOINT", u)?,
            None => format!("https://email.{aws_region}.amazonaws.com"),
        };
        let secs = |name: &'static str, default: i64, max: i64| -> Result<i64, ConfigError> {
            match opt(name) {
                None => Ok(default * 1000),
                Some(v) => v
                    .parse::<i64>()
                    .ok()
                    .filter(|s| (1..=max).contains(s))
                    .map(|s| s * 1000)
                    .ok_or_else(|| ConfigError::Invalid(name, format!("must be 1-{max} seconds"))),
            }
        };
        let claim_lease_ms = secs("CLAIM_LEASE_SECONDS", 30, 900)?;
        let reminder_window_ms = secs("REMINDER_BEFORE_SECONDS", 24 * 3600, 366 * 86_400)?;
        let retention_ms = secs("RETENTION_SECONDS", 90 * 86_400, 10 * 366 * 86_400)?;
        let default_locale = match opt("DEFAULT_LOCALE").as_deref() {
            None | Some("en") => "en".to_owned(),
            Some("ja") => "ja".to_owned(),
            Some(_) => return Err(ConfigError::Invalid("DEFAULT_LOCALE", "must be en or ja".into())),
        };
        let d1_faults = match opt("D1_FAULTS") {
            None => D1Faults::Off,
            Some(v) => D1Faults::parse(&v).map_err(|e| ConfigError::Invalid("D1_FAULTS", e))?,
        };
        if d1_faults.enabled() && !is_loopback_origin(&public_base_url) {
            return Err(ConfigError::Invalid(
                "D1_FAULTS",
                "the D1 fault switch is for local development and benchmarks only: it is refused unless \
                 PUBLIC_BASE_URL is a loopback origin (127.0.0.1, localhost, [::1])"
                    .into(),
            ));
        }
        Ok(Self {
            d1_faults,
            public_base_url,
            issuer,
            jwks_url,
            client_id,
            token_use,
            cognito_domain,
            register_scope: opt("REGISTER_SCOPE").unwrap_or_else(|| "ringi/approvals.write".into()),
            register_client_ids,
            register_api_key_hashes,
            aws_region,
            aws_credentials,
            sfn_endpoint,
            ses_endpoint,
            mail_from: opt("MAIL_FROM"),
            claim_lease_ms,
            reminder_window_ms,
            retention_ms,
            default_locale,
            version: opt("RINGI_VERSION").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        })
    }

    pub fn user_rules(&self) -> JwtRules {
        JwtRules { issuer: self.issuer.clone(), token_use: self.token_use, client_ids: vec![self.client_id.clone()] }
    }

    /// Machine registration uses client-credentials access tokens.
    pub fn register_rules(&self) -> JwtRules {
        JwtRules {
            issuer: self.issuer.clone(),
            token_use: TokenUse::Access,
            client_ids: self.register_client_ids.clone(),
        }
    }

    pub fn spa_config(&self) -> SpaConfig {
        SpaConfig {
            cognito_domain: self.cognito_domain.clone(),
            client_id: self.client_id.clone(),
            redirect_uri: format!("{}/auth/callback", self.public_base_url),
            issuer: self.issuer.clone(),
            token_use: self.token_use,
            default_locale: self.default_locale.clone(),
            version: self.version.clone(),
        }
    }

    pub fn approval_url(&self, id: &str) -> String {
        format!("{}/a/{id}", self.public_base_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    const BASE: &[(&str, &str)] = &[
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8787/"),
        ("COGNITO_ISSUER", "https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_X"),
        ("COGNITO_CLIENT_ID", "client"),
    ];

    #[test]
    fn defaults() {
        let c = Config::from_lookup(lookup(BASE)).unwrap();
        assert_eq!(c.public_base_url, "http://127.0.0.1:8787");
        assert_eq!(
            c.jwks_url,
            "https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_X/.well-known/jwks.json"
        );
        assert_eq!(c.token_use, TokenUse::Access);
        assert_eq!(c.register_client_ids, vec!["client"]);
        assert_eq!(c.sfn_endpoint, "https://states.us-east-1.amazonaws.com");
        assert_eq!(c.spa_config().redirect_uri, "http://127.0.0.1:8787/auth/callback");
        assert!(c.aws_credentials.is_none());
        assert_eq!(c.claim_lease_ms, 30_000);
    }

    #[test]
    fn d1_faults_only_on_loopback() {
        let mut local = BASE.to_vec();
        local.push(("D1_FAULTS", "header"));
        assert_eq!(Config::from_lookup(lookup(&local)).unwrap().d1_faults, D1Faults::Header);
        local.push(("D1_FAULTS", "call=3"));
        let mut prod = local.clone();
        prod[0] = ("PUBLIC_BASE_URL", "https://ringi.example.com");
        let err = Config::from_lookup(lookup(&prod)).unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid("D1_FAULTS", m) if m.contains("loopback")), "{err}");
        prod[0] = ("PUBLIC_BASE_URL", "https://127.0.0.1.example.com");
        assert!(Config::from_lookup(lookup(&prod)).is_err());
        let mut bad = BASE.to_vec();
        bad.push(("D1_FAULTS", "sometimes"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("D1_FAULTS", _)));
        assert!(is_loopback_origin("http://localhost:8787") && is_loopback_origin("http://[::1]:1"));
        assert!(!is_loopback_origin("http://127.0.0.1.nip.io") && !is_loopback_origin("https://example.com"));
        assert_eq!(Config::from_lookup(lookup(BASE)).unwrap().d1_faults, D1Faults::Off);
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(Config::from_lookup(lookup(&BASE[1..])).unwrap_err(), ConfigError::Missing("PUBLIC_BASE_URL"));
        let mut bad = BASE.to_vec();
        bad.push(("TOKEN_USE", "refresh"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("TOKEN_USE", _)));
        let mut bad = BASE.to_vec();
        bad.push(("REGISTER_API_KEYS", "abc"));
        assert!(matches!(Config::from_lookup(lookup(&bad)).unwrap_err(), ConfigError::Invalid("REGISTER_API_KEYS", _)));
        let mut bad = BASE.to_vec();
        bad.push(("AWS_ACCESS_KEY_ID", "AKID"));
        assert!(Config::from_lookup(lookup(&bad)).is_err());
    }
}
