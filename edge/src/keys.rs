//! Signing with ringi's keys (`ringi_core::adapters::keyring`): WebCrypto ECDSA P-256 with SHA-256, each key
//! imported once per isolate — the key ring's signing key (a rotated secret brings a new one) and the VAPID key
//! Web Push signs with (`crate::push`).

use std::cell::RefCell;

use js_sys::{Array, Object, Uint8Array};
use ringi_core::adapters::keyring::{jws, KeyRing, SigningKey};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::CryptoKey;

use crate::platform::{algorithm, subtle};

thread_local! {
    /// The private keys imported so far, by their public point: the ring's signing key (a rotated secret brings
    /// a new one) and the VAPID key (`crate::push`).
    static IMPORTED: RefCell<Vec<(Vec<u8>, CryptoKey)>> = const { RefCell::new(Vec::new()) };
}

/// `claims` as a compact JWS (ES256) typed `typ`, signed with the ring's signing key.
pub async fn sign(ring: &KeyRing, typ: &str, claims: &Value) -> Result<String, String> {
    let input = ring.signing_input(typ, claims);
    Ok(jws(&input, &es256(&ring.signing, input.as_bytes()).await?))
}

/// ECDSA P-256 with SHA-256 over `input` with a private key of ringi's (the ring's or the VAPID key): the raw
/// `r ‖ s` signature WebCrypto returns.
pub async fn es256(key: &SigningKey, input: &[u8]) -> Result<Vec<u8>, String> {
    let imported = imported(key).await?;
    let promise = subtle()
        .sign_with_object_and_u8_array(&algorithm("ECDSA", &[("hash", "SHA-256".into())]), &imported, input)
        .map_err(|_| "signing failed".to_owned())?;
    let sig = JsFuture::from(promise).await.map_err(|_| "signing failed".to_owned())?;
    Ok(Uint8Array::new(&sig).to_vec())
}

/// The key imported once per isolate.
async fn imported(key: &SigningKey) -> Result<CryptoKey, String> {
    let id = key.public_point();
    if let Some(k) = IMPORTED.with(|s| s.borrow().iter().find(|(p, _)| *p == id).map(|(_, k)| k.clone())) {
        return Ok(k);
    }
    let failed = |_: JsValue| "the signing key did not import".to_owned();
    let jwk = js_object(&key.private_jwk()).map_err(failed)?;
    let promise = subtle()
        .import_key_with_object(
            "jwk",
            &jwk,
            &algorithm("ECDSA", &[("namedCurve", "P-256".into())]),
            false,
            &Array::of1(&"sign".into()),
        )
        .map_err(failed)?;
    let k: CryptoKey = JsFuture::from(promise).await.map_err(failed)?.unchecked_into();
    IMPORTED.with(|s| s.borrow_mut().push((id, k.clone())));
    Ok(k)
}

/// A JSON value as a JS object (through `JSON.parse`: the JWK holds only strings and booleans).
fn js_object(v: &Value) -> Result<Object, JsValue> {
    js_sys::JSON::parse(&v.to_string()).map(JsCast::unchecked_into)
}
