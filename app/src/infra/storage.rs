//! Web storage helpers. Tokens and sign-in state go to `sessionStorage` only (per tab, cleared with the tab);
//! `localStorage` holds nothing but UI preferences (the language).

use serde::de::DeserializeOwned;
use serde::Serialize;
use web_sys::Storage;

fn session() -> Option<Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

fn local() -> Option<Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

pub fn session_get(key: &str) -> Option<String> {
    session()?.get_item(key).ok().flatten()
}

pub fn session_set(key: &str, value: &str) {
    if let Some(s) = session() {
        let _ = s.set_item(key, value);
    }
}

pub fn session_remove(key: &str) {
    if let Some(s) = session() {
        let _ = s.remove_item(key);
    }
}

pub fn session_get_json<T: DeserializeOwned>(key: &str) -> Option<T> {
    serde_json::from_str(&session_get(key)?).ok()
}

pub fn session_set_json<T: Serialize>(key: &str, value: &T) {
    if let Ok(text) = serde_json::to_string(value) {
        session_set(key, &text);
    }
}

/// Removes every ringi key from sessionStorage (sign-out).
pub fn session_clear_ringi() {
    if let Some(s) = session() {
        let len = s.length().unwrap_or(0);
        let keys: Vec<String> = (0..len).filter_map(|i| s.key(i).ok().flatten()).collect();
        for k in keys.iter().filter(|k| k.starts_with("ringi.")) {
            let _ = s.remove_item(k);
        }
    }
}

/// A UI preference (never a credential).
pub fn pref_get(key: &str) -> Option<String> {
    local()?.get_item(key).ok().flatten()
}

pub fn pref_set(key: &str, value: &str) {
    if let Some(s) = local() {
        let _ = s.set_item(key, value);
    }
}
