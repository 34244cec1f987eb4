//! Caller authentication: JWTs of the configured issuer (Cognito or OpenID Connect) (RS256 verified with WebCrypto, keys only from the configured
//! JWKS) and registration API keys. Reasons for refusals are logged, never returned.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Array, Object, Reflect};
use ringi_core::adapters::idp::JwtRules;
use ringi_core::adapters::jwks::Jwk;
use ringi_core::adapters::jwt::{self, JwtError};
use ringi_core::base::hex::{constant_time_eq, hex_sha256};
use ringi_core::base::principal::Identity;
use ringi_core::config::Config;
use ringi_core::ApiError;
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::CryptoKey;
use worker::Request;

use crate::platform::{algorithm, log, subtle, wall_ms};

thread_local! {
    // Per isolate: survives across requests, so keys are imported once.
    static KEYS: RefCell<HashMap<String, CryptoKey>> = RefCell::new(HashMap::new());
}

pub fn bearer(req: &Request) -> Option<String> {
    let h = req.headers().get("authorization").ok().flatten()?;
    let (scheme, value) = h.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !value.trim().is_empty()).then(|| value.trim().to_owned())
}

/// Verifies the request's bearer JWT against `rules`; any failure is a 401.
pub async fn authenticate(req: &Request, cfg: &Config, rules: &JwtRules) -> Result<Identity, ApiError> {
    let Some(raw) = bearer(req) else {
        log("info", "auth_refused", json!({"reason": "no bearer token"}));
        return Err(ApiError::Unauthorized);
    };
    verify(&raw, cfg, rules).await.map_err(|e| {
        log("info", "auth_refused", json!({"reason": e.to_string()}));
        ApiError::Unauthorized
    })
}

pub async fn verify(raw: &str, cfg: &Config, rules: &JwtRules) -> Result<Identity, JwtError> {
    let parsed = jwt::parse(raw)?;
    // OIDC: the JWKS URL is in the discovery document, cached like the keys (no round trip once warm).
    let jwks_url = crate::discovery::jwks_url(cfg).await?;
    let jwk = crate::jwks::key_for(&parsed.kid, &jwks_url).await?;
    let key = crypto_key(&jwk).await?;
    let algo = rsa_algorithm();
    let promise = subtle()
        .verify_with_object_and_u8_array_and_u8_array(&algo, &key, &parsed.signature, parsed.signing_input.as_bytes())
        .map_err(|_| JwtError::BadSignature)?;
    let ok = JsFuture::from(promise).await.map_err(|_| JwtError::BadSignature)?;
    if ok.as_bool() != Some(true) {
        return Err(JwtError::BadSignature);
    }
    jwt::validate_claims(&parsed.claims, rules, wall_ms() / 1000)
}

/// The registrant label of the configured API key `presented` matches: `api-key:` and the first 8 hex digits
/// of its SHA-256 (operators can tell their keys apart; the key itself cannot be derived from it).
pub fn api_key_label(cfg: &Config, presented: &str) -> Option<String> {
    let digest = hex_sha256(presented.as_bytes());
    // Check every entry so timing does not reveal which one matched.
    let hit = cfg
        .register_api_key_hashes
        .iter()
        .fold(false, |hit, h| constant_time_eq(h.as_bytes(), digest.as_bytes()) | hit);
    hit.then(|| format!("api-key:{}", &digest[..8]))
}

fn rsa_algorithm() -> Object {
    algorithm("RSASSA-PKCS1-v1_5", &[("hash", "SHA-256".into())])
}

async fn crypto_key(jwk: &Jwk) -> Result<CryptoKey, JwtError> {
    let (Some(n), Some(e)) = (jwk.n.as_deref(), jwk.e.as_deref()) else { return Err(JwtError::UnknownKid) };
    let cache_key = format!("{}:{n}:{e}", jwk.kid.as_deref().unwrap_or_default());
    if let Some(k) = KEYS.with(|k| k.borrow().get(&cache_key).cloned()) {
        return Ok(k);
    }
    let data = Object::new();
    for (k, v) in [("kty", "RSA"), ("n", n), ("e", e), ("alg", "RS256")] {
        let _ = Reflect::set(&data, &k.into(), &v.into());
    }
    let _ = Reflect::set(&data, &"ext".into(), &JsValue::TRUE);
    let usages = Array::of1(&"verify".into());
    let import = |_: JsValue| JwtError::JwksUnavailable("key import failed".into());
    let promise = subtle().import_key_with_object("jwk", &data, &rsa_algorithm(), false, &usages).map_err(import)?;
    let key: CryptoKey = JsFuture::from(promise).await.map_err(import)?.unchecked_into();
    KEYS.with(|k| k.borrow_mut().insert(cache_key, key.clone()));
    Ok(key)
}
