//! What app/boot.js — the script that runs before the wasm has arrived — takes from the app: the storage keys, the
//! languages and the callback's path. `scripts/build/spa.sh` writes [`boot_js`] in front of it at build time
//! (`cargo run -p ringi-app --example early`), so nothing there is a copy kept equal by hand.

use ringi_core::base::locale::Locale;
use ringi_core::base::sign_in::CALLBACK_PATH;
use serde_json::json;

use crate::infra::config::LOCALE_PREF;
use ringi_sign_in::session::{PENDING_KEY, SESSION_KEY, SIGNED_OUT_KEY};

/// Strict, as the script was when it was a module: the directive must come before the constants.
const HEADER: &str =
    "// Generated at build time from the app's Rust sources (app/src/early.rs): do not edit.\n\"use strict\";\n";

/// boot.js's own note, for the callback page, of the sign-in's module the page before it has in the HTTP cache
/// (its URL; the callback page takes it out).
const SIGN_IN_CACHED: &str = "ringi.auth.moduleCached";

/// The constants in front of app/boot.js: where the app keeps its session, sign-in record and language choice (and
/// boot.js a note of its own),
/// the languages the UI speaks, and the path the provider sends a sign-in back to.
pub fn boot_js() -> String {
    let storage = json!({
        "session": SESSION_KEY,
        "pending": PENDING_KEY,
        "signedOut": SIGNED_OUT_KEY,
        "locale": LOCALE_PREF,
        "signInCached": SIGN_IN_CACHED,
    });
    let languages: Vec<&str> = Locale::ALL.iter().map(|l| l.as_str()).collect();
    format!(
        "{HEADER}const STORAGE = {storage};\nconst LANGUAGES = {};\nconst CALLBACK_PATH = {};\n",
        json!(languages),
        json!(CALLBACK_PATH)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use super::*;

    const BOOT_JS: &str = include_str!("../boot.js");

    /// The names read as `<object>.<name>` in a script (`t.approve`, `STORAGE.session`).
    fn members<'a>(script: &'a str, object: &str) -> Vec<&'a str> {
        let needle = format!("{object}.");
        script
            .match_indices(&needle)
            .filter(|(at, _)| !script[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.'))
            .map(|(at, _)| {
                let rest = &script[at + needle.len()..];
                &rest[..rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len())]
            })
            .collect()
    }

    fn object_of(prelude: &str, name: &str) -> Map<String, Value> {
        let line = prelude.lines().find_map(|l| l.strip_prefix(&format!("const {name} = "))).expect("declared");
        serde_json::from_str::<Value>(line.trim_end_matches(';')).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn every_storage_key_boot_js_reads_is_the_apps() {
        let storage = object_of(&boot_js(), "STORAGE");
        let used = members(BOOT_JS, "STORAGE");
        assert!(!used.is_empty());
        for name in used {
            assert!(storage.contains_key(name), "boot.js reads STORAGE.{name}, which the app does not name");
        }
        assert_eq!(storage["session"], SESSION_KEY);
    }

    #[test]
    fn the_script_declares_none_of_what_is_written_in_front_of_it() {
        for line in boot_js().lines().filter_map(|l| l.strip_prefix("const ")) {
            let name = &line[..line.find(' ').unwrap()];
            assert!(!BOOT_JS.contains(&format!("const {name} ")), "boot.js declares {name} itself");
        }
    }
}
