//! Web-identity federation for the callbacks: the worker is its own OpenID Connect issuer for AWS. It signs a
//! short-lived JWT (ES256, its key a worker secret), publishes the public keys and a discovery document below
//! `PUBLIC_BASE_URL/.well-known/`, and trades the JWT for temporary credentials of the target account's role
//! (`sts:AssumeRoleWithWebIdentity`). No long-lived AWS key signs a callback. The signing itself is the
//! platform's (WebCrypto); everything else — keys, claims, the STS request and answer — is here.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
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

/// A P-256 key as a JWK (`kty` EC, `crv` P-256, `x`, `y`, `kid`; `d` for the private one).
#[derive(Clone, Deserialize, PartialEq, Eq)]
struct EcJwk {
    kty: String,
    crv: String,
    x: String,
    y: String,
    kid: String,
    #[serde(default)]
    d: Option<String>,
}

impl std::fmt::Debug for EcJwk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EcJwk({})", self.kid)
    }
}

impl EcJwk {
    fn parse(v: &Value, private: bool) -> Result<Self, String> {
        let k: EcJwk =
            serde_json::from_value(v.clone()).map_err(|_| "must be a JWK with kty, crv, x, y and kid".to_owned())?;
        let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(c).is_ok_and(|b| b.len() == 32);
        if k.kty != "EC" || k.crv != "P-256" || !coordinate(&k.x) || !coordinate(&k.y) {
            return Err("must be an EC P-256 key (ES256)".into());
        }
        if k.kid.is_empty() || k.kid.len() > 64 || !k.kid.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("kid must be 1-64 printable characters".into());
        }
        match (&k.d, private) {
            (Some(d), true) if coordinate(d) => Ok(k),
            (_, true) => Err("must be a private key (d)".into()),
            (Some(_), false) => Err(format!("key {} is published: it must not hold the private part (d)", k.kid)),
            (None, false) => Ok(k),
        }
    }

    fn public(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y, "kid": self.kid, "alg": "ES256", "use": "sig"})
    }
}

/// `FEDERATION_SIGNING_KEY`'s private key. Never printed: `Debug` shows the kid only.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(EcJwk);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.0.kid)
    }
}

impl SigningKey {
    pub fn kid(&self) -> &str {
        &self.0.kid
    }

    /// The JWK WebCrypto imports (`importKey("jwk", …)`, ECDSA P-256, usage `sign`).
    pub fn private_jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.0.x, "y": self.0.y, "d": self.0.d, "ext": false})
    }
}

/// The federation settings (config: `FEDERATION_SIGNING_KEY`, `FEDERATION_PUBLISHED_KEYS`, `FEDERATION_AUDIENCE`,
/// `STS_ENDPOINT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Federation {
    pub signing: SigningKey,
    /// Public keys published besides the signing key's: the next one before a rotation, the previous one after.
    published: Vec<EcJwk>,
    pub audience: String,
    /// One fixed STS endpoint (a local stand-in); by default the target region's own.
    pub sts_endpoint: Option<String>,
}

impl Federation {
    pub fn parse(
        signing: &str,
        published: Option<&str>,
        audience: Option<String>,
        sts_endpoint: Option<String>,
    ) -> Result<Self, (&'static str, String)> {
        let v: Value =
            serde_json::from_str(signing).map_err(|_| ("FEDERATION_SIGNING_KEY", "must be a JWK (JSON)".into()))?;
        let signing = SigningKey(EcJwk::parse(&v, true).map_err(|e| ("FEDERATION_SIGNING_KEY", e))?);
        let published = match published {
            None => Vec::new(),
            Some(p) => {
                let keys: Vec<Value> = serde_json::from_str(p)
                    .map_err(|_| ("FEDERATION_PUBLISHED_KEYS", "must be a JSON array of public JWKs".to_owned()))?;
                let keys = keys
                    .iter()
                    .map(|k| EcJwk::parse(k, false))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ("FEDERATION_PUBLISHED_KEYS", e))?;
                if keys.iter().any(|k| k.kid == signing.0.kid) {
                    return Err(("FEDERATION_PUBLISHED_KEYS", "repeats the signing key's kid".into()));
                }
                keys
            }
        };
        Ok(Self { signing, published, audience: audience.unwrap_or_else(|| DEFAULT_AUDIENCE.into()), sts_endpoint })
    }

    /// `/.well-known/jwks.json`: the signing key's public half first, then the other published keys.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = std::iter::once(&self.signing.0).chain(&self.published).map(EcJwk::public).collect();
        json!({ "keys": keys })
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

    /// The JWS signing input (`header.payload`, base64url) of a token for `purpose` in `account`, issued at
    /// `now_s`.
    pub fn signing_input(&self, issuer: &str, purpose: Purpose, account: &AccountId, now_s: i64, jti: &str) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": self.signing.kid()});
        let claims = json!({"iss": issuer, "sub": subject(purpose, account), "aud": self.audience, "iat": now_s,
                            "nbf": now_s, "exp": now_s + TOKEN_TTL_SECS, "jti": jti});
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
    }

    /// The STS endpoint for `region` (with the path's `/`).
    pub fn sts_url(&self, region: &str) -> String {
        match &self.sts_endpoint {
            Some(fixed) => format!("{fixed}/"),
            None => format!("https://sts.{region}.amazonaws.com/"),
        }
    }
}

/// A finished JWS from its signing input and the raw (r‖s) ECDSA signature WebCrypto returns.
pub fn jws(signing_input: &str, signature: &[u8]) -> String {
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
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

    // A throwaway P-256 key (RFC 7515 appendix A.3's example key).
    const PRIVATE: &str = r#"{"kty":"EC","crv":"P-256","kid":"k1",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        "d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
    const NEXT: &str = r#"[{"kty":"EC","crv":"P-256","kid":"k2",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]"#;

    fn fed(published: Option<&str>) -> Federation {
        Federation::parse(PRIVATE, published, None, None).unwrap()
    }

    #[test]
    fn published_keys_are_public_halves_with_the_signing_key_first() {
        let jwks = fed(Some(NEXT)).jwks();
        let kids: Vec<&str> = jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
        assert_eq!(kids, ["k1", "k2"]);
        assert!(!jwks.to_string().contains("\"d\""), "no private part is ever published");
        assert_eq!(jwks["keys"][0]["alg"], "ES256");
        assert!(!format!("{:?}", fed(None)).contains("jpsQ"), "Debug hides the private key");
    }

    #[test]
    fn keys_are_checked() {
        let err = |s: &str, p: Option<&str>| Federation::parse(s, p, None, None).unwrap_err();
        assert_eq!(err("nope", None).0, "FEDERATION_SIGNING_KEY");
        assert!(err(&PRIVATE.replace(r#""d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI""#, r#""z":1"#), None)
            .1
            .contains("private"));
        assert!(err(&PRIVATE.replace("P-256", "P-384"), None).1.contains("P-256"));
        assert!(err(PRIVATE, Some(&NEXT.replace("k2", "k1"))).1.contains("kid"));
        let leaked = NEXT.replace(r#""kid":"k2""#, r#""kid":"k2","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI""#);
        assert!(err(PRIVATE, Some(&leaked)).1.contains("must not hold"));
    }

    #[test]
    fn a_token_names_the_issuer_the_audience_and_its_account() {
        let f = fed(None);
        let account = AccountId::parse("111111111111").unwrap();
        let input = f.signing_input("https://ringi.example.com", Purpose::Callback, &account, 1_800_000_000, "j1");
        let (h, c) = input.split_once('.').unwrap();
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).unwrap()).unwrap();
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}));
        assert_eq!(claims["iss"], "https://ringi.example.com");
        assert_eq!(claims["aud"], "sts.amazonaws.com");
        assert_eq!(claims["sub"], "ringi-callback:111111111111");
        let own = f.signing_input("https://ringi.example.com", Purpose::Worker, &account, 1_800_000_000, "j2");
        let own: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(own.split('.').nth(1).unwrap()).unwrap()).unwrap();
        assert_eq!(own["sub"], "ringi-worker:111111111111");
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), TOKEN_TTL_SECS);
        assert_eq!(jws(&input, &[0u8; 64]).matches('.').count(), 2);
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
