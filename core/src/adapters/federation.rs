//! Web-identity federation for the callbacks: the worker is its own OpenID Connect issuer for AWS. It signs a
//! short-lived JWT (ES256, its key a worker secret), publishes the public keys and a discovery document below
//! `PUBLIC_BASE_URL/.well-known/`, and trades the JWT for temporary credentials of the target account's role
//! (`sts:AssumeRoleWithWebIdentity`). No long-lived AWS key signs a callback. The signing itself is the
//! platform's (WebCrypto); everything else — keys, claims, the STS request and answer — is here.

use serde_json::{json, Value};

use crate::adapters::aws_target::AccountId;
use crate::adapters::sigv4::AwsCredentials;

/// What the role's trust policy checks `aud` against: AWS's own audience for web identities.
pub const DEFAULT_AUDIENCE: &str = "sts.amazonaws.com";
/// The JWT only has to reach STS: a few minutes covers any clock skew AWS tolerates.
pub const TOKEN_TTL_SECS: i64 = 300;
/// The shortest session AssumeRoleWithWebIdentity grants; the cache keeps it until shortly before its end.
pub const SESSION_SECS: u32 = 900;
/// Cached credentials are replaced this long before they expire, so none expires in the middle of a callback.
pub const REFRESH_MARGIN_MS: i64 = 120_000;
pub const STS_VERSION: &str = "2011-06-15";

/// What a token is for. Each role trusts one subject, so a token for one purpose assumes no other role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Answering the workflows of one account (its callback role).
    Callback,
    /// The worker's own calls in its home account: mail (SES) and the DynamoDB table (`AWS_ROLE_ARN`).
    Worker,
}

/// The `sub` of the tokens minted for `purpose` in `account`: each role trusts only its own account's and
/// purpose's (`ringi-callback:ACCOUNT`, `ringi-worker:ACCOUNT`).
pub fn subject(purpose: Purpose, account: &AccountId) -> String {
    match purpose {
        Purpose::Callback => format!("ringi-callback:{account}"),
        Purpose::Worker => format!("ringi-worker:{account}"),
    }
}

/// The federation settings (config: `FEDERATION_AUDIENCE`, `STS_ENDPOINT`; the tokens are signed with the key
/// ring, `crate::adapters::keyring`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Federation {
    pub audience: String,
    /// One fixed STS endpoint (a local stand-in); by default the target region's own.
    pub sts_endpoint: Option<String>,
}

impl Federation {
    pub fn new(audience: Option<String>, sts_endpoint: Option<String>) -> Self {
        Self { audience: audience.unwrap_or_else(|| DEFAULT_AUDIENCE.into()), sts_endpoint }
    }

    /// `/.well-known/openid-configuration`: what IAM reads to find the keys of `issuer`.
    pub fn discovery(issuer: &str) -> Value {
        json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "claims_supported": ["iss", "sub", "aud", "iat", "nbf", "exp", "jti"],
        })
    }

    /// The claims of a token for `purpose` in `account`, issued at `now_s` (signed with the key ring as a `JWT`).
    pub fn claims(&self, issuer: &str, purpose: Purpose, account: &AccountId, now_s: i64, jti: &str) -> Value {
        json!({"iss": issuer, "sub": subject(purpose, account), "aud": self.audience, "iat": now_s,
               "nbf": now_s, "exp": now_s + TOKEN_TTL_SECS, "jti": jti})
    }

    /// The STS endpoint for `region` (with the path's `/`).
    pub fn sts_url(&self, region: &str) -> String {
        match &self.sts_endpoint {
            Some(fixed) => format!("{fixed}/"),
            None => format!("https://sts.{region}.amazonaws.com/"),
        }
    }
}

/// `application/x-www-form-urlencoded`: unreserved characters as they are, everything else `%XX`.
fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The AssumeRoleWithWebIdentity request body (Query protocol, no signature: the token is the credential).
/// Contains the JWT: never log it.
pub fn assume_role_body(role_arn: &str, session_name: &str, token: &str) -> String {
    [
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", STS_VERSION),
        ("RoleArn", role_arn),
        ("RoleSessionName", session_name),
        ("WebIdentityToken", token),
        ("DurationSeconds", &SESSION_SECS.to_string()),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", form_encode(v)))
    .collect::<Vec<_>>()
    .join("&")
}

/// Temporary credentials and when they expire (Unix ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    pub credentials: AwsCredentials,
    pub expires_at: i64,
}

impl SessionCredentials {
    /// Still good for a callback: not within [`REFRESH_MARGIN_MS`] of its end.
    pub fn fresh(&self, now: i64) -> bool {
        self.expires_at - now > REFRESH_MARGIN_MS
    }
}

fn xml_text<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(xml[start..end].trim())
}

/// The credentials of an AssumeRoleWithWebIdentity answer (XML), or what is missing.
pub fn parse_assume_role_response(xml: &str) -> Result<SessionCredentials, String> {
    let field = |t: &str| xml_text(xml, t).filter(|v| !v.is_empty()).ok_or_else(|| format!("no {t} in the answer"));
    let expiration = field("Expiration")?;
    let expires_at = crate::base::time::parse_rfc3339("Expiration", expiration)
        .map_err(|_| format!("Expiration {expiration:?} is not a timestamp"))?;
    Ok(SessionCredentials {
        credentials: AwsCredentials {
            access_key_id: field("AccessKeyId")?.to_owned(),
            secret_access_key: field("SecretAccessKey")?.to_owned(),
            session_token: Some(field("SessionToken")?.to_owned()),
        },
        expires_at,
    })
}

/// STS error codes that say "try again" although they come as a 400.
pub fn sts_retryable(code: &str) -> bool {
    matches!(code, "IDPCommunicationError" | "IDPCommunicationErrorException")
}

/// A Step Functions refusal that means the temporary credentials ran out: fetch new ones and retry.
pub fn expired_credentials(code: &str) -> bool {
    matches!(code, "ExpiredToken" | "ExpiredTokenException" | "RequestExpired")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed() -> Federation {
        Federation::new(None, None)
    }

    #[test]
    fn a_token_names_the_issuer_the_audience_and_its_account() {
        let f = fed();
        let account = AccountId::parse("111111111111").unwrap();
        let claims = f.claims("https://ringi.example.com", Purpose::Callback, &account, 1_800_000_000, "j1");
        assert_eq!(claims["iss"], "https://ringi.example.com");
        assert_eq!(claims["aud"], "sts.amazonaws.com");
        assert_eq!(claims["sub"], "ringi-callback:111111111111");
        let own = f.claims("https://ringi.example.com", Purpose::Worker, &account, 1_800_000_000, "j2");
        assert_eq!(own["sub"], "ringi-worker:111111111111");
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), TOKEN_TTL_SECS);
        let d = Federation::discovery("https://ringi.example.com");
        assert_eq!(d["jwks_uri"], "https://ringi.example.com/.well-known/jwks.json");
        assert_eq!(f.sts_url("eu-west-1"), "https://sts.eu-west-1.amazonaws.com/");
    }

    #[test]
    fn the_sts_request_is_form_encoded() {
        let body = assume_role_body("arn:aws:iam::111111111111:role/r", "ringi-a", "h.p.s+/=");
        assert!(body.starts_with("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&"));
        assert!(body.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A111111111111%3Arole%2Fr"));
        assert!(body.contains("WebIdentityToken=h.p.s%2B%2F%3D"));
        assert!(body.ends_with("DurationSeconds=900"));
    }

    #[test]
    fn sts_answers_read_into_credentials_that_are_refreshed_before_they_expire() {
        let xml = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
          <AssumeRoleWithWebIdentityResult><Credentials>
            <SessionToken>tok</SessionToken><SecretAccessKey>sec</SecretAccessKey>
            <Expiration>2027-01-15T08:00:00.495751Z</Expiration><AccessKeyId>ASIAX</AccessKeyId>
          </Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"#;
        let s = parse_assume_role_response(xml).unwrap();
        assert_eq!(s.credentials.access_key_id, "ASIAX");
        assert_eq!(s.credentials.session_token.as_deref(), Some("tok"));
        let end = s.expires_at;
        assert!(s.fresh(end - REFRESH_MARGIN_MS - 1));
        assert!(!s.fresh(end - REFRESH_MARGIN_MS));
        assert!(parse_assume_role_response("<Error><Code>AccessDenied</Code></Error>")
            .unwrap_err()
            .contains("Expiration"));
        assert!(sts_retryable("IDPCommunicationError") && !sts_retryable("InvalidIdentityToken"));
        assert!(expired_credentials("ExpiredTokenException") && !expired_credentials("AccessDenied"));
    }
}
