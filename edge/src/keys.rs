//! Signing with ringi's key ring (`ringi_core::adapters::keyring`): WebCrypto ECDSA P-256 with SHA-256, the key
//! imported once per isolate and kid (a rotated secret brings a new kid).

use std::cell::RefCell;

use js_sys::{Array, Object, Reflect, Uint8Array};
use ringi_core::adapters::keyring::{jws, KeyRing};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::CryptoKey;

use crate::platform::subtle;

thread_local! {
    static SIGNER: RefCell<Option<(String, CryptoKey)>> = const { RefCell::new(None) };
}

/// `claims` as a compact JWS (ES256) typed `typ`, signed with the ring's signing key.
pub async fn sign(ring: &KeyRing, typ: &str, claims: &Value) -> Result<String, String> {
    let key = signing_key(ring).await?;
    let input = ring.signing_input(typ, claims);
    let promise = subtle()
        .sign_with_object_and_u8_array(&ecdsa(Some("hash"), "SHA-256"), &key, input.as_bytes())
        .map_err(|_| "signing failed".to_owned())?;
    let sig = JsFuture::from(promise).await.map_err(|_| "signing failed".to_owned())?;
    Ok(jws(&input, &Uint8Array::new(&sig).to_vec()))
}

async fn signing_key(ring: &KeyRing) -> Result<CryptoKey, String> {
    let kid = ring.signing.kid();
    if let Some(k) = SIGNER.with(|s| s.borrow().as_ref().filter(|(id, _)| id == kid).map(|(_, k)| k.clone())) {
        return Ok(k);
    }
    let failed = |_: JsValue| "the signing key did not import".to_owned();
    let jwk = js_object(&ring.signing.private_jwk()).map_err(failed)?;
    let promise = subtle()
        .import_key_with_object("jwk", &jwk, &ecdsa(Some("namedCurve"), "P-256"), false, &Array::of1(&"sign".into()))
        .map_err(failed)?;
    let key: CryptoKey = JsFuture::from(promise).await.map_err(failed)?.unchecked_into();
    SIGNER.with(|s| *s.borrow_mut() = Some((kid.to_owned(), key.clone())));
    Ok(key)
}

/// `{name: "ECDSA", <param>: <value>}` (import: the curve; sign: the hash).
fn ecdsa(param: Option<&str>, value: &str) -> Object {
    let o = Object::new();
    let _ = Reflect::set(&o, &"name".into(), &"ECDSA".into());
    if let Some(p) = param {
        let _ = Reflect::set(&o, &p.into(), &value.into());
    }
    o
}

/// A JSON value as a JS object (through `JSON.parse`: the JWK holds only strings and booleans).
fn js_object(v: &Value) -> Result<Object, JsValue> {
    js_sys::JSON::parse(&v.to_string()).map(JsCast::unchecked_into)
}
