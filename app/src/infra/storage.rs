//! Web storage helpers. Tokens and sign-in state go to `sessionStorage` only (per tab, cleared with the tab);
//! `localStorage` holds nothing but UI preferences (the language).

use web_sys::Storage;

/// The tab's session storage, as the sign-in keeps it (one implementation for both).
pub use ringi_sign_in::session::{
    clear_ringi as session_clear_ringi, get as session_get, get_json as session_get_json, remove as session_remove,
    set as session_set, set_json as session_set_json,
};

fn local() -> Option<Storage> {
    web_sys::window()?.local_storage().ok().flatten()
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
