//! JWT rules for Cognito and for any OpenID Connect provider, following aws-jwt-verify: everything except the
//! RSA signature check itself, which the platform does (WebCrypto in the worker) over
//! [`ParsedJwt::signing_input`]. What differs between providers (the audience/client check, where groups,
//! scopes and the email are read) is a [`ClaimMapping`] and an [`AudienceRule`] from the configuration.

use std::collections::BTreeSet;
use std::fmt;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::base::principal::Identity;

/// Tokens larger than this are rejected before any parsing.
pub const MAX_JWT_BYTES: usize = 8 * 1024;
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: i64 = 60;

/// Why a token was refused. Logged by the worker, never returned to the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("token too large")]
    TooLarge,
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("unsupported alg {0:?}")]
    UnsupportedAlg(String),
    #[error("missing kid")]
    MissingKid,
    #[error("no RS256 signing key with that kid in the issuer's JWKS")]
    UnknownKid,
    #[error("bad signature")]
    BadSignature,
    #[error("claim {0}: {1}")]
    Claim(&'static str, &'static str),
    #[error("JWKS unavailable: {0}")]
    JwksUnavailable(String),
}

/// Which Cognito token the API takes as the bearer (`token_use` claim; the SPA sends that one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenUse {
    Id,
    #[default]
    Access,
}

impl TokenUse {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Access => "access",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "id" => Some(Self::Id),
            "access" => Some(Self::Access),
            _ => None,
        }
    }
}

/// `EMAIL_VERIFIED`: when the `email` claim is taken as the caller's address (`{email}` approvers match it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EmailPolicy {
    /// `require` (the default): only with `email_verified: true` (a boolean) in the same token.
    #[default]
    RequireVerified,
    /// `trust`: as the provider sends it, for providers that send no `email_verified` but only put addresses
    /// they manage there (an Entra ID tenant's `email`). Refused with the Cognito profile.
    Trust,
}

impl EmailPolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "require" => Some(Self::RequireVerified),
            "trust" => Some(Self::Trust),
            _ => None,
        }
    }
}

/// `SCOPE_CLAIM`: where the granted scopes are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScopeClaim {
    /// `scope`: one space-separated string (Cognito, RFC 9068).
    #[default]
    Scope,
    /// `scp`: an array of strings (Okta) or a space-separated string (Entra ID).
    Scp,
}

impl ScopeClaim {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "scope" => Some(Self::Scope),
            "scp" => Some(Self::Scp),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Scope => "scope",
            Self::Scp => "scp",
        }
    }
}

/// Where a token's groups, scopes and email are read (the configuration's claim mapping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    /// `GROUPS_CLAIM`: a top-level claim name (`cognito:groups`, `groups`, `roles`,
    /// `https://example.com/groups`); failing that, a dotted path into nested objects (`realm_access.roles`).
    /// Its value must be an array of strings.
    pub groups_claim: String,
    pub email: EmailPolicy,
    pub scope_claim: ScopeClaim,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        Self {
            groups_claim: "cognito:groups".into(),
            email: EmailPolicy::RequireVerified,
            scope_claim: ScopeClaim::Scope,
        }
    }
}

/// How a token shows it was issued for ringi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudienceRule {
    /// Cognito: `token_use` must be this one; `client_id` (access tokens) or `aud` (ID tokens) must be one of
    /// the rules' client ids.
    Cognito(TokenUse),
    /// OpenID Connect: `aud` (a string or an array) must contain `audience`. The client the token was issued
    /// to (`azp`, else `client_id` (RFC 9068), else `cid` (Okta)) must be one of the rules' client ids; when
    /// the token names none, it is accepted only if `client_required` is false (an ID token with a single
    /// audience carries no `azp`).
    Oidc { audience: String, client_required: bool },
}

/// Which kind of identity provider signs people in (the configuration's provider profile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdpProfile {
    /// A Cognito user pool (`COGNITO_ISSUER`): endpoints below `COGNITO_DOMAIN`, Cognito's `/logout`,
    /// `token_use` + `client_id` claims.
    #[default]
    Cognito,
    /// Any OpenID Connect provider (`OIDC_ISSUER`): endpoints from its discovery document, `aud`/`azp`.
    Oidc,
}

/// What a token must satisfy for one purpose (user calls or machine registration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtRules {
    pub issuer: String,
    pub audience: AudienceRule,
    pub client_ids: Vec<String>,
    pub mapping: ClaimMapping,
}

/// A structurally valid RS256 JWT whose signature is not yet verified.
#[derive(Debug, Clone)]
pub struct ParsedJwt<'a> {
    pub kid: String,
    pub claims: Map<String, Value>,
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    pub signing_input: &'a str,
    pub signature: Vec<u8>,
}

fn b64(seg: &str) -> Result<Vec<u8>, JwtError> {
    if seg.is_empty() || !seg.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(JwtError::Malformed("segment is not base64url"));
    }
    URL_SAFE_NO_PAD.decode(seg).map_err(|_| JwtError::Malformed("segment is not base64url"))
}

/// A JSON object with no duplicate keys at the top level (a duplicate `sub` or `iss` could be read one
/// way here and another way by a different parser).
struct StrictObject(Map<String, Value>);

impl<'de> Deserialize<'de> for StrictObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrictObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<StrictObject, A::Error> {
                let mut out = Map::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    if out.insert(k, v).is_some() {
                        return Err(de::Error::custom("duplicate key"));
                    }
                }
                Ok(StrictObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn strict_object(bytes: &[u8], what: &'static str) -> Result<Map<String, Value>, JwtError> {
    serde_json::from_slice::<StrictObject>(bytes).map(|o| o.0).map_err(|_| JwtError::Malformed(what))
}

/// Structure, header and algorithm checks. `jku`, `x5u`, `jwk` and friends in the header are ignored:
/// keys come only from the configured issuer's JWKS.
pub fn parse(raw: &str) -> Result<ParsedJwt<'_>, JwtError> {
    if raw.len() > MAX_JWT_BYTES {
        return Err(JwtError::TooLarge);
    }
    let mut parts = raw.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(JwtError::Malformed("expected three segments"));
    };
    let header = strict_object(&b64(h)?, "header is not a JSON object")?;
    // RFC 7515 §4.1.11: a recipient that does not understand a listed extension must reject the token, and
    // this verifier understands none (Cognito never sets `crit`).
    if header.contains_key("crit") {
        return Err(JwtError::Malformed("crit header is not supported"));
    }
    match header.get("alg") {
        Some(Value::String(alg)) if alg == "RS256" => {}
        Some(Value::String(alg)) => return Err(JwtError::UnsupportedAlg(alg.clone())),
        _ => return Err(JwtError::Malformed("alg missing")),
    }
    let kid = match header.get("kid") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err(JwtError::MissingKid),
    };
    let claims = strict_object(&b64(p)?, "payload is not a JSON object")?;
    let signature = b64(s)?;
    Ok(ParsedJwt { kid, claims, signing_input: &raw[..h.len() + 1 + p.len()], signature })
}

fn num(claims: &Map<String, Value>, name: &'static str) -> Result<Option<f64>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            n.as_f64().filter(|f| f.is_finite()).map(Some).ok_or(JwtError::Claim(name, "not a finite number"))
        }
        Some(_) => Err(JwtError::Claim(name, "not a number")),
    }
}

fn string<'a>(claims: &'a Map<String, Value>, name: &'static str) -> Result<Option<&'a str>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(JwtError::Claim(name, "not a string")),
    }
}

/// Claim checks of a token whose signature has been verified. `now` is Unix seconds.
pub fn validate_claims(claims: &Map<String, Value>, rules: &JwtRules, now: i64) -> Result<Identity, JwtError> {
    let now = now as f64;
    let leeway = LEEWAY_SECS as f64;
    if string(claims, "iss")? != Some(rules.issuer.as_str()) {
        return Err(JwtError::Claim("iss", "not the configured issuer"));
    }
    let client_id = client_of(claims, rules)?;
    let exp = num(claims, "exp")?.ok_or(JwtError::Claim("exp", "missing"))?;
    if exp + leeway <= now {
        return Err(JwtError::Claim("exp", "expired"));
    }
    if num(claims, "nbf")?.is_some_and(|nbf| nbf - leeway > now) {
        return Err(JwtError::Claim("nbf", "not yet valid"));
    }
    if num(claims, "iat")?.is_some_and(|iat| iat - leeway > now) {
        return Err(JwtError::Claim("iat", "issued in the future"));
    }
    let sub = string(claims, "sub")?.filter(|s| !s.is_empty()).ok_or(JwtError::Claim("sub", "missing"))?;
    let email = match rules.mapping.email {
        EmailPolicy::RequireVerified => {
            string(claims, "email")?.filter(|_| matches!(claims.get("email_verified"), Some(Value::Bool(true))))
        }
        EmailPolicy::Trust => string(claims, "email")?,
    }
    .filter(|e| !e.is_empty())
    .map(str::to_owned);
    let groups = groups(claims, &rules.mapping.groups_claim)?;
    let scopes = scopes(claims, rules.mapping.scope_claim)?;
    // Cognito's names first; `preferred_username` for OpenID Connect providers. A machine's token has none.
    let username = string(claims, "cognito:username")?
        .or(string(claims, "username")?)
        .or(string(claims, "preferred_username")?)
        .map(str::to_owned);
    Ok(Identity { sub: sub.to_owned(), email, groups, username, scopes, client_id: client_id.to_owned() })
}

/// The client a token was issued to, checked against the rules' audience rule and client ids.
fn client_of(claims: &Map<String, Value>, rules: &JwtRules) -> Result<String, JwtError> {
    let accepted = |c: &str| rules.client_ids.iter().any(|id| id == c);
    match &rules.audience {
        AudienceRule::Cognito(token_use) => {
            if string(claims, "token_use")? != Some(token_use.as_str()) {
                return Err(JwtError::Claim("token_use", "wrong token use"));
            }
            let client_claim = match token_use {
                TokenUse::Access => "client_id",
                TokenUse::Id => "aud",
            };
            let client_id = string(claims, client_claim)?.ok_or(JwtError::Claim("client_id/aud", "missing"))?;
            if !accepted(client_id) {
                return Err(JwtError::Claim("client_id/aud", "not an accepted client"));
            }
            Ok(client_id.to_owned())
        }
        AudienceRule::Oidc { audience, client_required } => {
            let ok = match claims.get("aud") {
                Some(Value::String(a)) => a == audience,
                Some(Value::Array(items)) => {
                    if !items.iter().all(Value::is_string) {
                        return Err(JwtError::Claim("aud", "not strings"));
                    }
                    items.iter().any(|a| a.as_str() == Some(audience))
                }
                None => return Err(JwtError::Claim("aud", "missing")),
                Some(_) => return Err(JwtError::Claim("aud", "not a string or array")),
            };
            if !ok {
                return Err(JwtError::Claim("aud", "not the configured audience"));
            }
            let mut named = None;
            for name in ["azp", "client_id", "cid"] {
                if let Some(c) = string(claims, name)? {
                    named = Some(c);
                    break;
                }
            }
            match named {
                Some(c) if accepted(c) => Ok(c.to_owned()),
                Some(_) => Err(JwtError::Claim("azp/client_id", "not an accepted client")),
                None if *client_required => Err(JwtError::Claim("azp/client_id", "missing")),
                None => Ok(audience.clone()),
            }
        }
    }
}

/// The claim at `path`: the top-level member of that name, else the dotted path through nested objects.
fn claim_at<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    let mut parts = path.split('.');
    let mut here = claims.get(parts.next()?)?;
    for part in parts {
        here = here.as_object()?.get(part)?;
    }
    Some(here)
}

/// The groups at `path` ([`ClaimMapping::groups_claim`]); none when the claim is absent. Also the SPA's
/// display-only read of its own token.
pub fn groups(claims: &Map<String, Value>, path: &str) -> Result<Vec<String>, JwtError> {
    match claim_at(claims, path) {
        None => Ok(vec![]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|g| g.as_str().map(str::to_owned).ok_or(JwtError::Claim("groups", "not strings")))
            .collect(),
        Some(_) => Err(JwtError::Claim("groups", "not an array")),
    }
}

fn scopes(claims: &Map<String, Value>, claim: ScopeClaim) -> Result<Vec<String>, JwtError> {
    let split = |s: &str| s.split_whitespace().map(str::to_owned).collect();
    match (claim, claims.get(claim.name())) {
        (_, None) => Ok(vec![]),
        (_, Some(Value::String(s))) => Ok(split(s)),
        (ScopeClaim::Scp, Some(Value::Array(items))) => {
            items.iter().map(|s| s.as_str().map(str::to_owned).ok_or(JwtError::Claim("scp", "not strings"))).collect()
        }
        (_, Some(_)) => Err(JwtError::Claim("scope", "not a string")),
    }
}

/// One key of a JWKS document; unknown members are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(default, rename = "use")]
    pub use_: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The RSA signing key with this `kid` for a token whose header says RS256 ([`parse`] refuses every other
    /// `alg`). A key that names its `alg` must say RS256 (aws-jwt-verify: jwk.alg == alg), with `use` absent or
    /// `sig`. A key without `alg` (Entra ID publishes them so) is taken only when it says `use: sig`: a key
    /// that names neither could be meant for encryption, and is refused.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| {
            let purpose_ok = match k.alg.as_deref() {
                Some(alg) => alg == "RS256" && k.use_.as_deref().is_none_or(|u| u == "sig"),
                None => k.use_.as_deref() == Some("sig"),
            };
            k.kid.as_deref() == Some(kid) && k.kty == "RSA" && purpose_ok && k.n.is_some() && k.e.is_some()
        })
    }
}

/// JWKS cache with aws-jwt-verify's penalty box: an unknown `kid` triggers at most one refetch per
/// `min_refetch_ms`, so a flood of made-up kids cannot hammer the issuer. Keyed by the JWKS URL: keys are only
/// used for the URL they were fetched from (a discovery document that names another `jwks_uri`, another
/// configuration in the same isolate), and another URL starts afresh.
#[derive(Debug, Clone, Default)]
pub struct JwksCache {
    /// Where `jwks` came from and `last_attempt` went.
    url: Option<String>,
    jwks: Option<Jwks>,
    fetched_at: i64,
    last_attempt: Option<i64>,
    /// Start of the fetch in flight, if any; it counts as in flight for at most [`JWKS_IN_FLIGHT_MS`].
    in_flight_since: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    Found(Jwk),
    /// Fetch the JWKS now, then [`JwksCache::store`] it and look again.
    Fetch,
    NotFound,
}

pub const JWKS_MAX_AGE_MS: i64 = 60 * 60 * 1000;
pub const JWKS_MIN_REFETCH_MS: i64 = 10 * 1000;
/// How long a started fetch counts as in flight for other requests (which wait for it rather than fetch too),
/// whatever becomes of it: a fetching request that is cancelled mid-fetch never says it ended. Longer than the
/// worker's fetch timeout (3 s), so that it only matters for such a request.
pub const JWKS_IN_FLIGHT_MS: i64 = 5 * 1000;

impl JwksCache {
    /// The key `kid` of the JWKS at `url`.
    pub fn lookup(&self, url: &str, kid: &str, now_ms: i64) -> KeyLookup {
        if self.url.as_deref() != Some(url) {
            return KeyLookup::Fetch;
        }
        let fresh = self.jwks.is_some() && now_ms - self.fetched_at < JWKS_MAX_AGE_MS;
        if let Some(k) = self.jwks.as_ref().and_then(|j| j.find(kid)).filter(|_| fresh) {
            return KeyLookup::Found(k.clone());
        }
        match self.last_attempt {
            Some(t) if now_ms - t < JWKS_MIN_REFETCH_MS && fresh => KeyLookup::NotFound,
            Some(t) if now_ms - t < JWKS_MIN_REFETCH_MS => match self.jwks.as_ref().and_then(|j| j.find(kid)) {
                // Stale but the issuer was just asked: keep using what we have.
                Some(k) => KeyLookup::Found(k.clone()),
                None => KeyLookup::NotFound,
            },
            _ => KeyLookup::Fetch,
        }
    }

    /// Record a fetch attempt of `url` before it is made (failed fetches count against the rate limit too).
    /// Another URL than the cached one drops the cached keys and attempts: they were not this URL's.
    pub fn note_attempt(&mut self, url: &str, now_ms: i64) {
        if self.url.as_deref() != Some(url) {
            *self = Self { url: Some(url.to_owned()), in_flight_since: self.in_flight_since, ..Self::default() };
        }
        self.last_attempt = Some(now_ms);
    }

    /// A fetch of `url` starts now: an attempt (rate limit), and in flight until [`Self::end_fetch`] or
    /// [`JWKS_IN_FLIGHT_MS`], whichever comes first. Returns the mark to end it with.
    pub fn begin_fetch(&mut self, url: &str, now_ms: i64) -> i64 {
        self.note_attempt(url, now_ms);
        self.in_flight_since = Some(now_ms);
        now_ms
    }

    /// The fetch begun at `mark` is over (only that one: a later fetch may have begun after it expired).
    pub fn end_fetch(&mut self, mark: i64) {
        if self.in_flight_since == Some(mark) {
            self.in_flight_since = None;
        }
    }

    /// Is a fetch in flight (begun less than [`JWKS_IN_FLIGHT_MS`] ago and not ended)?
    pub fn fetch_in_flight(&self, now_ms: i64) -> bool {
        self.in_flight_mark(now_ms).is_some()
    }

    /// The mark of the fetch in flight, if any (what [`Self::begin_fetch`] returned for it).
    pub fn in_flight_mark(&self, now_ms: i64) -> Option<i64> {
        self.in_flight_since.filter(|since| now_ms - since < JWKS_IN_FLIGHT_MS)
    }

    /// The keys fetched from `url`; dropped if the cache has moved on to another URL meanwhile.
    pub fn store(&mut self, url: &str, jwks: Jwks, now_ms: i64) {
        if self.url.as_deref() == Some(url) {
            self.jwks = Some(jwks);
            self.fetched_at = now_ms;
        }
    }

    pub fn kids(&self) -> BTreeSet<String> {
        self.jwks.iter().flat_map(|j| j.keys.iter().filter_map(|k| k.kid.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enc(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    fn token(header: Value, payload: Value) -> String {
        format!("{}.{}.{}", enc(&header), enc(&payload), URL_SAFE_NO_PAD.encode(b"sig"))
    }

    fn rules(token_use: TokenUse) -> JwtRules {
        JwtRules {
            issuer: "https://issuer/pool".into(),
            audience: AudienceRule::Cognito(token_use),
            client_ids: vec!["client1".into()],
            mapping: ClaimMapping::default(),
        }
    }

    /// Entra-like rules: `aud` is the client, groups in `roles`, scopes in `scp`, email trusted as sent.
    fn oidc_rules(client_required: bool) -> JwtRules {
        JwtRules {
            issuer: "https://login.example.com/tenant/v2.0".into(),
            audience: AudienceRule::Oidc { audience: "client1".into(), client_required },
            client_ids: vec!["client1".into()],
            mapping: ClaimMapping {
                groups_claim: "roles".into(),
                email: EmailPolicy::Trust,
                scope_claim: ScopeClaim::Scp,
            },
        }
    }

    fn entra_claims() -> Map<String, Value> {
        json!({"iss": "https://login.example.com/tenant/v2.0", "aud": "client1", "azp": "client1", "sub": "u1",
               "exp": 2_000, "iat": 1_000, "nbf": 1_000, "roles": ["finance"], "scp": "approvals.read openid",
               "email": "a@example.com", "preferred_username": "a@example.com", "ver": "2.0"})
        .as_object()
        .unwrap()
        .clone()
    }

    fn edit(mut c: Map<String, Value>, k: &str, v: Option<Value>) -> Map<String, Value> {
        match v {
            Some(v) => c.insert(k.into(), v),
            None => c.remove(k),
        };
        c
    }

    #[test]
    fn oidc_tokens_are_checked_on_aud_and_azp() {
        let r = oidc_rules(false);
        let id = validate_claims(&entra_claims(), &r, 1_500).unwrap();
        assert_eq!(id.client_id, "client1");
        // No token_use / client_id needed; aud may be an array that contains the audience.
        let arr = edit(entra_claims(), "aud", Some(json!(["other", "client1"])));
        assert!(validate_claims(&arr, &r, 1_500).is_ok());
        for (name, bad) in [
            ("aud other", edit(entra_claims(), "aud", Some(json!("other")))),
            ("aud array without us", edit(entra_claims(), "aud", Some(json!(["other"])))),
            ("aud missing", edit(entra_claims(), "aud", None)),
            ("aud not strings", edit(entra_claims(), "aud", Some(json!([1, "client1"])))),
            ("aud a number", edit(entra_claims(), "aud", Some(json!(7)))),
            ("azp another client", edit(entra_claims(), "azp", Some(json!("machine")))),
            ("iss", edit(entra_claims(), "iss", Some(json!("https://login.example.com/other/v2.0")))),
        ] {
            assert!(validate_claims(&bad, &r, 1_500).is_err(), "{name} must be refused");
        }
        // An ID token with a single audience names no azp: fine for people, not for machines.
        let no_azp = edit(entra_claims(), "azp", None);
        assert_eq!(validate_claims(&no_azp, &r, 1_500).unwrap().client_id, "client1");
        assert!(validate_claims(&no_azp, &oidc_rules(true), 1_500).is_err());
        // RFC 9068's client_id and Okta's cid name the client too.
        let okta = edit(edit(no_azp.clone(), "cid", Some(json!("client1"))), "aud", Some(json!("client1")));
        assert!(validate_claims(&okta, &oidc_rules(true), 1_500).is_ok());
        let other_cid = edit(no_azp, "client_id", Some(json!("machine")));
        assert!(validate_claims(&other_cid, &r, 1_500).is_err());
        // A Cognito-shaped rule refuses the OIDC token (no token_use), and the other way round.
        assert!(validate_claims(&entra_claims(), &rules(TokenUse::Access), 1_500).is_err());
        let mut cognito_as_oidc = oidc_rules(false);
        cognito_as_oidc.issuer = "https://issuer/pool".into();
        assert!(validate_claims(&access_claims(), &cognito_as_oidc, 1_500).is_err(), "no aud");
    }

    #[test]
    fn groups_claim_is_configurable() {
        let mut r = oidc_rules(false);
        assert_eq!(validate_claims(&entra_claims(), &r, 1_500).unwrap().groups, vec!["finance"]);
        r.mapping.groups_claim = "groups".into();
        assert!(validate_claims(&entra_claims(), &r, 1_500).unwrap().groups.is_empty(), "roles not read");
        let c = edit(entra_claims(), "groups", Some(json!(["ops", "finance"])));
        assert_eq!(validate_claims(&c, &r, 1_500).unwrap().groups, vec!["ops", "finance"]);
        // A namespaced custom claim (Auth0/Okta style) is one top-level name, dots and slashes included.
        r.mapping.groups_claim = "https://example.com/groups".into();
        let c = edit(entra_claims(), "https://example.com/groups", Some(json!(["approvers"])));
        assert_eq!(validate_claims(&c, &r, 1_500).unwrap().groups, vec!["approvers"]);
        // A nested path (Keycloak's realm_access.roles).
        r.mapping.groups_claim = "realm_access.roles".into();
        let c = edit(entra_claims(), "realm_access", Some(json!({"roles": ["finance", "ops"]})));
        assert_eq!(validate_claims(&c, &r, 1_500).unwrap().groups, vec!["finance", "ops"]);
        let c = edit(entra_claims(), "realm_access", Some(json!({"roles": "finance"})));
        assert!(validate_claims(&c, &r, 1_500).is_err(), "a string is not a list of groups");
        let c = edit(entra_claims(), "realm_access", Some(json!(["finance"])));
        assert!(validate_claims(&c, &r, 1_500).unwrap().groups.is_empty(), "no such path: no groups");
        r.mapping.groups_claim = "roles".into();
        let c = edit(entra_claims(), "roles", Some(json!(["finance", 3])));
        assert!(validate_claims(&c, &r, 1_500).is_err());
        // Cognito's default is cognito:groups.
        assert_eq!(ClaimMapping::default().groups_claim, "cognito:groups");
    }

    #[test]
    fn email_policy_and_scope_claim() {
        let mut r = oidc_rules(false);
        assert_eq!(validate_claims(&entra_claims(), &r, 1_500).unwrap().email.as_deref(), Some("a@example.com"));
        r.mapping.email = EmailPolicy::RequireVerified;
        assert_eq!(validate_claims(&entra_claims(), &r, 1_500).unwrap().email, None, "no email_verified");
        let verified = edit(entra_claims(), "email_verified", Some(json!(true)));
        assert_eq!(validate_claims(&verified, &r, 1_500).unwrap().email.as_deref(), Some("a@example.com"));
        let stringly = edit(entra_claims(), "email_verified", Some(json!("true")));
        assert_eq!(validate_claims(&stringly, &r, 1_500).unwrap().email, None, "only the boolean counts");
        // scp: a space-separated string (Entra) or an array (Okta).
        assert_eq!(validate_claims(&entra_claims(), &r, 1_500).unwrap().scopes, vec!["approvals.read", "openid"]);
        let okta = edit(entra_claims(), "scp", Some(json!(["openid", "ringi/approvals.write"])));
        assert_eq!(validate_claims(&okta, &r, 1_500).unwrap().scopes, vec!["openid", "ringi/approvals.write"]);
        assert!(validate_claims(&edit(entra_claims(), "scp", Some(json!([1]))), &r, 1_500).is_err());
        assert!(validate_claims(&edit(entra_claims(), "scp", Some(json!(1))), &r, 1_500).is_err());
        // With SCOPE_CLAIM=scope the scp claim is not read, and an array in scope is refused.
        r.mapping.scope_claim = ScopeClaim::Scope;
        assert!(validate_claims(&entra_claims(), &r, 1_500).unwrap().scopes.is_empty());
        let arr = edit(entra_claims(), "scope", Some(json!(["openid"])));
        assert!(validate_claims(&arr, &r, 1_500).is_err());
        assert_eq!(EmailPolicy::parse("trust"), Some(EmailPolicy::Trust));
        assert_eq!(EmailPolicy::parse("yes"), None);
        assert_eq!(ScopeClaim::parse("scp"), Some(ScopeClaim::Scp));
        assert_eq!(ScopeClaim::parse("scopes"), None);
    }

    fn access_claims() -> Map<String, Value> {
        json!({"iss": "https://issuer/pool", "token_use": "access", "client_id": "client1", "sub": "u1",
               "exp": 2_000, "iat": 1_000, "cognito:groups": ["finance"], "scope": "openid email"})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn parse_accepts_rs256_with_kid_and_exposes_signing_input() {
        let t = token(json!({"alg": "RS256", "kid": "k1"}), json!({"sub": "x"}));
        let p = parse(&t).unwrap();
        assert_eq!(p.kid, "k1");
        assert_eq!(p.signature, b"sig");
        assert_eq!(p.signing_input, &t[..t.rfind('.').unwrap()]);
    }

    #[test]
    fn parse_rejects_attacks_and_garbage() {
        let p = json!({"sub": "x"});
        assert_eq!(
            parse(&token(json!({"alg": "none", "kid": "k"}), p.clone())).unwrap_err(),
            JwtError::UnsupportedAlg("none".into())
        );
        assert_eq!(
            parse(&token(json!({"alg": "HS256", "kid": "k"}), p.clone())).unwrap_err(),
            JwtError::UnsupportedAlg("HS256".into())
        );
        assert_eq!(
            parse(&token(json!({"alg": "rs256", "kid": "k"}), p.clone())).unwrap_err(),
            JwtError::UnsupportedAlg("rs256".into())
        );
        assert_eq!(parse(&token(json!({"alg": "RS256"}), p.clone())).unwrap_err(), JwtError::MissingKid);
        assert_eq!(parse(&token(json!({"alg": "RS256", "kid": 7}), p.clone())).unwrap_err(), JwtError::MissingKid);
        assert!(matches!(parse("a.b").unwrap_err(), JwtError::Malformed(_)));
        assert!(matches!(parse("a.b.c.d").unwrap_err(), JwtError::Malformed(_)));
        assert!(matches!(parse("eyJ.e30.").unwrap_err(), JwtError::Malformed(_)));
        assert!(matches!(parse("e30=.e30.c2ln").unwrap_err(), JwtError::Malformed(_)));
        assert_eq!(parse(&"a".repeat(MAX_JWT_BYTES + 1)).unwrap_err(), JwtError::TooLarge);
        // Non-object payload and duplicate keys.
        let h = enc(&json!({"alg": "RS256", "kid": "k"}));
        let arr = URL_SAFE_NO_PAD.encode(b"[1,2]");
        assert!(matches!(parse(&format!("{h}.{arr}.c2ln")).unwrap_err(), JwtError::Malformed(_)));
        let dup = URL_SAFE_NO_PAD.encode(br#"{"sub":"a","sub":"b"}"#);
        assert!(matches!(parse(&format!("{h}.{dup}.c2ln")).unwrap_err(), JwtError::Malformed(_)));
    }

    #[test]
    fn parse_rejects_any_crit_header() {
        let p = json!({"sub": "x"});
        for crit in [json!(["exp"]), json!(["b64"]), json!([]), json!("exp"), json!(null)] {
            let t = token(json!({"alg": "RS256", "kid": "k", "crit": crit, "exp": 1}), p.clone());
            assert_eq!(parse(&t).unwrap_err(), JwtError::Malformed("crit header is not supported"), "crit {crit}");
        }
    }

    #[test]
    fn valid_access_token_yields_identity() {
        let id = validate_claims(&access_claims(), &rules(TokenUse::Access), 1_500).unwrap();
        assert_eq!(id.sub, "u1");
        assert_eq!(id.groups, vec!["finance"]);
        assert_eq!(id.scopes, vec!["openid", "email"]);
        assert_eq!(id.email, None);
    }

    #[test]
    fn claim_failures() {
        let r = rules(TokenUse::Access);
        let with = |k: &str, v: Value| {
            let mut c = access_claims();
            c.insert(k.into(), v);
            c
        };
        let without = |k: &str| {
            let mut c = access_claims();
            c.remove(k);
            c
        };
        assert!(validate_claims(&with("iss", json!("https://issuer/pool/")), &r, 1_500).is_err());
        assert!(validate_claims(&with("token_use", json!("id")), &r, 1_500).is_err());
        assert!(validate_claims(&with("client_id", json!("other")), &r, 1_500).is_err());
        assert!(validate_claims(&without("exp"), &r, 1_500).is_err());
        assert!(validate_claims(&with("exp", json!("2000")), &r, 1_500).is_err());
        assert!(validate_claims(&without("sub"), &r, 1_500).is_err());
        assert!(validate_claims(&with("cognito:groups", json!("finance")), &r, 1_500).is_err());
        // exp/nbf/iat with 60 s leeway.
        assert!(validate_claims(&access_claims(), &r, 2_059).is_ok());
        assert!(validate_claims(&access_claims(), &r, 2_060).is_err());
        assert!(validate_claims(&with("nbf", json!(1_560)), &r, 1_500).is_ok());
        assert!(validate_claims(&with("nbf", json!(1_561)), &r, 1_500).is_err());
        assert!(validate_claims(&with("iat", json!(1_561)), &r, 1_500).is_err());
    }

    #[test]
    fn id_tokens_use_aud_and_verified_email_only() {
        let mut c = access_claims();
        c.remove("client_id");
        c.insert("token_use".into(), json!("id"));
        c.insert("aud".into(), json!("client1"));
        c.insert("email".into(), json!("a@example.com"));
        let r = rules(TokenUse::Id);
        assert_eq!(validate_claims(&c, &r, 1_500).unwrap().email, None, "unverified email is dropped");
        c.insert("email_verified".into(), json!(true));
        assert_eq!(validate_claims(&c, &r, 1_500).unwrap().email.as_deref(), Some("a@example.com"));
        c.insert("aud".into(), json!("other"));
        assert!(validate_claims(&c, &r, 1_500).is_err());
    }

    fn jwks() -> Jwks {
        serde_json::from_value(json!({"keys": [
            {"kty": "RSA", "kid": "a", "alg": "RS256", "use": "sig", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "noalg", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "alg": "RS256", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "ec", "alg": "ES256", "crv": "P-256", "x": "x", "y": "y"},
            {"kty": "RSA", "kid": "entra", "use": "sig", "n": "AQAB", "e": "AQAB", "x5t": "t", "issuer": "i"},
            {"kty": "RSA", "kid": "noalg-enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "ps256", "alg": "PS256", "use": "sig", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "ec-noalg", "use": "sig", "crv": "P-256", "x": "x", "y": "y"},
            {"kty": "RSA", "kid": "noalg-no-n", "use": "sig", "e": "AQAB"}
        ]}))
        .unwrap()
    }

    #[test]
    fn jwks_key_selection() {
        let j = jwks();
        assert!(j.find("a").is_some());
        assert!(j.find("noalg").is_none(), "a key naming neither alg nor use is refused");
        assert!(j.find("entra").is_some(), "no alg, but RSA with use sig: taken for an RS256 token");
        assert!(j.find("noalg-enc").is_none(), "no alg and an encryption key");
        assert!(j.find("ps256").is_none(), "a key that names another alg");
        assert!(j.find("ec-noalg").is_none(), "no alg but not RSA");
        assert!(j.find("noalg-no-n").is_none(), "no modulus");
        assert!(j.find("enc").is_none());
        assert!(j.find("ec").is_none());
        assert!(j.find("zzz").is_none());
    }

    const KEYS: &str = "https://idp.example.com/keys";

    #[test]
    fn cache_refetches_unknown_kid_at_most_every_10s() {
        let mut c = JwksCache::default();
        assert_eq!(c.lookup(KEYS, "a", 0), KeyLookup::Fetch);
        c.note_attempt(KEYS, 0);
        c.store(KEYS, jwks(), 0);
        assert!(matches!(c.lookup(KEYS, "a", 1), KeyLookup::Found(_)));
        assert_eq!(c.lookup(KEYS, "new", 5_000), KeyLookup::NotFound, "penalty box");
        assert_eq!(c.lookup(KEYS, "new", 10_000), KeyLookup::Fetch);
        c.note_attempt(KEYS, 10_000);
        assert_eq!(c.lookup(KEYS, "new", 10_001), KeyLookup::NotFound);
        // After an hour the cached set is refreshed even for known kids.
        assert_eq!(c.lookup(KEYS, "a", JWKS_MAX_AGE_MS + 1), KeyLookup::Fetch);
        c.note_attempt(KEYS, JWKS_MAX_AGE_MS + 1);
        // Refresh failed (nothing stored): keep serving the known key rather than locking everyone out.
        assert!(matches!(c.lookup(KEYS, "a", JWKS_MAX_AGE_MS + 2), KeyLookup::Found(_)));
    }

    #[test]
    fn cached_keys_serve_only_the_url_they_came_from() {
        let other = "https://idp.example.com/other-keys";
        let mut c = JwksCache::default();
        c.begin_fetch(KEYS, 0);
        c.store(KEYS, jwks(), 0);
        assert!(matches!(c.lookup(KEYS, "a", 1), KeyLookup::Found(_)));
        // Another URL finds nothing, whatever the kid, and is fetched at once (its own rate limit).
        assert_eq!(c.lookup(other, "a", 2), KeyLookup::Fetch);
        let mark = c.begin_fetch(other, 2);
        assert_eq!(c.lookup(other, "a", 3), KeyLookup::NotFound, "penalty box of the new URL");
        // Keys of the first URL arriving late are not taken as the other URL's.
        c.store(KEYS, jwks(), 4);
        assert_eq!(c.lookup(other, "a", 5), KeyLookup::NotFound);
        assert_eq!(c.lookup(KEYS, "a", 5), KeyLookup::Fetch, "the first URL's keys were dropped");
        c.end_fetch(mark);
        c.store(other, jwks(), 6);
        assert!(matches!(c.lookup(other, "a", 7), KeyLookup::Found(_)));
    }

    #[test]
    fn a_fetch_in_flight_expires_even_if_its_request_never_ends_it() {
        let mut c = JwksCache::default();
        assert!(!c.fetch_in_flight(0));
        let mark = c.begin_fetch(KEYS, 1_000);
        assert!(c.fetch_in_flight(1_000) && c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS - 1));
        // The fetching request was cancelled: nobody calls end_fetch, the mark expires by itself.
        assert!(!c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS));
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_IN_FLIGHT_MS), KeyLookup::NotFound, "still rate-limited");
        assert_eq!(c.lookup(KEYS, "a", 1_000 + JWKS_MIN_REFETCH_MS), KeyLookup::Fetch, "then fetched again");
        // A stale end of the first fetch does not end a newer one.
        let newer = c.begin_fetch(KEYS, 1_000 + JWKS_MIN_REFETCH_MS);
        c.end_fetch(mark);
        assert!(c.fetch_in_flight(newer + 1));
        c.end_fetch(newer);
        assert!(!c.fetch_in_flight(newer + 1));
    }
}
