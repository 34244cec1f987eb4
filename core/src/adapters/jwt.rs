//! JWT rules for Cognito and for any OpenID Connect provider, following aws-jwt-verify: everything except the
//! RSA signature check itself, which the platform does (WebCrypto in the worker) over
//! [`ParsedJwt::signing_input`]. What differs between providers (the audience/client check, where groups,
//! scopes and the email are read) is a [`ClaimMapping`] and an [`AudienceRule`] from the configuration.

use std::fmt;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::adapters::idp::{AudienceRule, EmailPolicy, JwtRules, ScopeClaim, TokenUse};
use crate::base::principal::Identity;
use crate::base::sign_in::SignIn;

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
    let sign_in = sign_in(claims);
    Ok(Identity { sub: sub.to_owned(), email, groups, username, scopes, client_id: client_id.to_owned(), sign_in })
}

/// `auth_time`, `acr`, `amr` and Entra's `acrs` as the token carries them. A claim in another shape is read as
/// absent rather than refusing the token: it then proves nothing, and only an approval that asks for it is refused.
fn sign_in(claims: &Map<String, Value>) -> SignIn {
    let auth_time = claims.get("auth_time").and_then(Value::as_f64).filter(|t| t.is_finite() && *t >= 0.0);
    let acr = claims.get("acr").and_then(Value::as_str).filter(|a| !a.is_empty()).map(str::to_owned);
    let strings = |name: &str| match claims.get(name) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    SignIn { auth_time: auth_time.map(|t| t as i64), acr, amr: strings("amr"), contexts: strings("acrs") }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::idp::ClaimMapping;
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
    fn sign_in_claims_are_read_and_odd_shapes_prove_nothing() {
        let r = oidc_rules(false);
        let c = edit(edit(entra_claims(), "auth_time", Some(json!(1_200))), "acr", Some(json!("urn:x:loa:2")));
        let c = edit(c, "amr", Some(json!(["pwd", "mfa", 7])));
        let id = validate_claims(&c, &r, 1_500).unwrap();
        assert_eq!(id.sign_in.auth_time, Some(1_200));
        assert_eq!(id.sign_in.acr.as_deref(), Some("urn:x:loa:2"));
        assert_eq!(id.sign_in.amr, vec!["pwd", "mfa"]);
        let entra = validate_claims(&edit(entra_claims(), "acrs", Some(json!(["c1", "c4"]))), &r, 1_500).unwrap();
        assert_eq!(entra.sign_in.contexts, vec!["c1", "c4"]);
        // Another shape is no claim, and the token is still accepted.
        let odd = edit(edit(entra_claims(), "auth_time", Some(json!("1200"))), "acr", Some(json!(2)));
        let odd = edit(edit(odd, "amr", Some(json!("mfa"))), "acrs", Some(json!("c1")));
        let id = validate_claims(&odd, &r, 1_500).unwrap();
        assert_eq!(id.sign_in, SignIn::default());
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
}
