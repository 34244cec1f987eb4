//! Cognito JWT rules, following aws-jwt-verify: everything except the RSA signature check itself, which
//! the platform does (WebCrypto in the worker) over [`ParsedJwt::signing_input`].

use std::collections::BTreeSet;
use std::fmt;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::principal::Identity;

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

/// What a token must satisfy for one purpose (user calls or machine registration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtRules {
    pub issuer: String,
    pub token_use: TokenUse,
    /// `client_id` (access tokens) or `aud` (id tokens) must be one of these.
    pub client_ids: Vec<String>,
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
    if string(claims, "token_use")? != Some(rules.token_use.as_str()) {
        return Err(JwtError::Claim("token_use", "wrong token use"));
    }
    let client_claim = match rules.token_use {
        TokenUse::Access => "client_id",
        TokenUse::Id => "aud",
    };
    let client_id = string(claims, client_claim)?.ok_or(JwtError::Claim("client_id/aud", "missing"))?;
    if !rules.client_ids.iter().any(|c| c == client_id) {
        return Err(JwtError::Claim("client_id/aud", "not an accepted client"));
    }
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
    let email_verified = matches!(claims.get("email_verified"), Some(Value::Bool(true)));
    let email = string(claims, "email")?.filter(|_| email_verified).map(str::to_owned);
    let groups = match claims.get("cognito:groups") {
        None => vec![],
        Some(Value::Array(items)) => items
            .iter()
            .map(|g| g.as_str().map(str::to_owned).ok_or(JwtError::Claim("cognito:groups", "not strings")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(JwtError::Claim("cognito:groups", "not an array")),
    };
    let scopes =
        string(claims, "scope")?.map(|s| s.split_whitespace().map(str::to_owned).collect()).unwrap_or_default();
    let username = string(claims, "cognito:username")?.or(string(claims, "username")?).map(str::to_owned);
    Ok(Identity { sub: sub.to_owned(), email, groups, username, scopes, client_id: client_id.to_owned() })
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
    /// The RSA signing key with this `kid`, which must itself say RS256 (aws-jwt-verify: jwk.alg == alg).
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| {
            k.kid.as_deref() == Some(kid)
                && k.kty == "RSA"
                && k.alg.as_deref() == Some("RS256")
                && k.use_.as_deref().is_none_or(|u| u == "sig")
                && k.n.is_some()
                && k.e.is_some()
        })
    }
}

/// JWKS cache with aws-jwt-verify's penalty box: an unknown `kid` triggers at most one refetch per
/// `min_refetch_ms`, so a flood of made-up kids cannot hammer the issuer.
#[derive(Debug, Clone, Default)]
pub struct JwksCache {
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
    pub fn lookup(&self, kid: &str, now_ms: i64) -> KeyLookup {
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

    /// Record a fetch attempt before it is made (failed fetches count against the rate limit too).
    pub fn note_attempt(&mut self, now_ms: i64) {
        self.last_attempt = Some(now_ms);
    }

    /// A fetch starts now: an attempt (rate limit), and in flight until [`Self::end_fetch`] or
    /// [`JWKS_IN_FLIGHT_MS`], whichever comes first. Returns the mark to end it with.
    pub fn begin_fetch(&mut self, now_ms: i64) -> i64 {
        self.note_attempt(now_ms);
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

    pub fn store(&mut self, jwks: Jwks, now_ms: i64) {
        self.jwks = Some(jwks);
        self.fetched_at = now_ms;
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
        JwtRules { issuer: "https://issuer/pool".into(), token_use, client_ids: vec!["client1".into()] }
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
            {"kty": "EC", "kid": "ec", "alg": "ES256", "crv": "P-256", "x": "x", "y": "y"}
        ]}))
        .unwrap()
    }

    #[test]
    fn jwks_key_selection() {
        let j = jwks();
        assert!(j.find("a").is_some());
        assert!(j.find("noalg").is_none(), "the JWK must say RS256");
        assert!(j.find("enc").is_none());
        assert!(j.find("ec").is_none());
        assert!(j.find("zzz").is_none());
    }

    #[test]
    fn cache_refetches_unknown_kid_at_most_every_10s() {
        let mut c = JwksCache::default();
        assert_eq!(c.lookup("a", 0), KeyLookup::Fetch);
        c.note_attempt(0);
        c.store(jwks(), 0);
        assert!(matches!(c.lookup("a", 1), KeyLookup::Found(_)));
        assert_eq!(c.lookup("new", 5_000), KeyLookup::NotFound, "penalty box");
        assert_eq!(c.lookup("new", 10_000), KeyLookup::Fetch);
        c.note_attempt(10_000);
        assert_eq!(c.lookup("new", 10_001), KeyLookup::NotFound);
        // After an hour the cached set is refreshed even for known kids.
        assert_eq!(c.lookup("a", JWKS_MAX_AGE_MS + 1), KeyLookup::Fetch);
        c.note_attempt(JWKS_MAX_AGE_MS + 1);
        // Refresh failed (nothing stored): keep serving the known key rather than locking everyone out.
        assert!(matches!(c.lookup("a", JWKS_MAX_AGE_MS + 2), KeyLookup::Found(_)));
    }

    #[test]
    fn a_fetch_in_flight_expires_even_if_its_request_never_ends_it() {
        let mut c = JwksCache::default();
        assert!(!c.fetch_in_flight(0));
        let mark = c.begin_fetch(1_000);
        assert!(c.fetch_in_flight(1_000) && c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS - 1));
        // The fetching request was cancelled: nobody calls end_fetch, the mark expires by itself.
        assert!(!c.fetch_in_flight(1_000 + JWKS_IN_FLIGHT_MS));
        assert_eq!(c.lookup("a", 1_000 + JWKS_IN_FLIGHT_MS), KeyLookup::NotFound, "still rate-limited");
        assert_eq!(c.lookup("a", 1_000 + JWKS_MIN_REFETCH_MS), KeyLookup::Fetch, "then fetched again");
        // A stale end of the first fetch does not end a newer one.
        let newer = c.begin_fetch(1_000 + JWKS_MIN_REFETCH_MS);
        c.end_fetch(mark);
        assert!(c.fetch_in_flight(newer + 1));
        c.end_fetch(newer);
        assert!(!c.fetch_in_flight(newer + 1));
    }
}
