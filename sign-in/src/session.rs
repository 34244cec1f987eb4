//! The tab's session: the record the callback leaves in `sessionStorage` and the app reads, with the keys of
//! everything the sign-in keeps there. Tokens live in sessionStorage only (per tab, cleared with the tab), never
//! in localStorage.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ringi_core::base::json::{FromJson, Members, ReadError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use web_sys::Storage;

/// The session ([`Session`]).
pub const SESSION_KEY: &str = "ringi.session";
/// The one sign-in in flight, written by boot.js and consumed by the callback.
pub const PENDING_KEY: &str = "ringi.auth.pending";
/// Set by an explicit sign-out so that the landing page does not bounce straight back to the provider.
pub const SIGNED_OUT_KEY: &str = "ringi.signedOut";

/// What a completed sign-in keeps. Only the API bearer, no refresh token: when it expires (or the API answers
/// 401) the app goes through the authorize endpoint again, which a live provider session makes a quick round trip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The API bearer: the access token or the ID token (`TOKEN_USE`).
    pub bearer: String,
    /// Epoch milliseconds.
    pub expires_at: f64,
    pub obtained_at: f64,
    /// Obtained by signing in again after a refusal: if the API refuses this one too, the app stops instead of
    /// looping.
    #[serde(default)]
    pub via_reauth: bool,
    /// OIDC only: the ID token, sent back to the provider's end-session endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token_hint: Option<String>,
}

impl FromJson for Session {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            bearer: m.get("bearer"),
            expires_at: m.get("expiresAt"),
            obtained_at: m.get("obtainedAt"),
            via_reauth: m.or_default("viaReauth"),
            id_token_hint: m.or_default("idTokenHint"),
        })
    }
}

fn storage() -> Option<Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

pub fn get(key: &str) -> Option<String> {
    storage()?.get_item(key).ok().flatten()
}

pub fn set(key: &str, value: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(key, value);
    }
}

pub fn remove(key: &str) {
    if let Some(s) = storage() {
        let _ = s.remove_item(key);
    }
}

/// Removes every ringi key (sign-out).
pub fn clear_ringi() {
    if let Some(s) = storage() {
        let len = s.length().unwrap_or(0);
        let keys: Vec<String> = (0..len).filter_map(|i| s.key(i).ok().flatten()).collect();
        for k in keys.iter().filter(|k| k.starts_with("ringi.")) {
            let _ = s.remove_item(k);
        }
    }
}

pub fn get_json<T: FromJson>(key: &str) -> Option<T> {
    crate::json::from_str(&get(key)?).ok()
}

pub fn set_json<T: Serialize>(key: &str, value: &T) {
    if let Ok(text) = serde_json::to_string(value) {
        set(key, &text);
    }
}

/// Reads a JWT payload without verifying it: for lifetimes and display only (the worker verifies every token).
pub fn claims(token: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    match crate::json::parse(std::str::from_utf8(&bytes).ok()?)? {
        serde_json::Value::Object(claims) => Some(claims),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_read_as_serde_reads_it() {
        ringi_core::base::json::agrees::<Session>(serde_json::json!({
            "bearer": "b", "expiresAt": 1764570000000.0, "obtainedAt": 1764566400000u64, "viaReauth": true,
            "idTokenHint": "h"
        }));
    }
}
