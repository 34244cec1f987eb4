//! What app/boot.js and app/boot-form.js — the scripts that run before the wasm has arrived — take from the app:
//! the decision form's texts, core's limits, the field types the early form draws, the storage keys and the
//! languages. `scripts/build/spa.sh` writes [`boot_js`] / [`boot_form_js`] in front of each script at build time
//! (`cargo run -p ringi-app --example early`), so nothing there is a copy kept equal by hand. Whether the caller
//! may decide is not among them: the worker says so (`canDecide`), for the app and the early form alike.

use ringi_core::api::decision::COMMENT_MAX_CHARS;
use ringi_core::base::locale::Locale;
use ringi_core::base::sign_in::CALLBACK_PATH;
use ringi_core::domain::form::{FieldKind, TEXT_MAX_CHARS};
use serde_json::{json, Map, Value};

use crate::i18n::{texts, Texts};
use crate::infra::config::LOCALE_PREF;
use crate::pages::approval::{DRAFT_KEY_PREFIX, RADIO_MAX};
use ringi_sign_in::session::{PENDING_KEY, SESSION_KEY, SIGNED_OUT_KEY};

const HEADER: &str = "// Generated at build time from the app's Rust sources (app/src/early.rs): do not edit.\n";

/// The constants in front of app/boot.js: where the app keeps its session, sign-in record and language choice,
/// the languages the UI speaks, and the path the provider sends a sign-in back to.
pub fn boot_js() -> String {
    let storage = json!({
        "session": SESSION_KEY,
        "pending": PENDING_KEY,
        "signedOut": SIGNED_OUT_KEY,
        "locale": LOCALE_PREF,
    });
    let languages: Vec<&str> = Locale::ALL.iter().map(|l| l.as_str()).collect();
    format!(
        "{HEADER}const STORAGE = {storage};\nconst LANGUAGES = {};\nconst CALLBACK_PATH = {};\n",
        json!(languages),
        json!(CALLBACK_PATH)
    )
}

/// The constants in front of app/boot-form.js: the form's texts per language, the limits the worker checks,
/// where a choice turns from radios into a select, the field types it draws, and the draft's storage key.
pub fn boot_form_js() -> String {
    let by_language: Map<String, Value> =
        Locale::ALL.iter().map(|&l| (l.as_str().to_owned(), form_texts(texts(l)))).collect();
    format!(
        "{HEADER}const TEXTS = {};\nconst COMMENT_MAX_CHARS = {COMMENT_MAX_CHARS};\nconst TEXT_MAX_CHARS = \
         {TEXT_MAX_CHARS};\nconst RADIO_MAX = {RADIO_MAX};\nconst FIELD_TYPES = {};\nconst DRAFT_KEY_PREFIX = {};\n",
        Value::Object(by_language),
        json!(field_types()),
        json!(DRAFT_KEY_PREFIX),
    )
}

/// The decision form's texts of one language, under the names boot-form.js reads (`t.approve` …). The one with
/// numbers is a template: `{k}` and `{n}` where the app puts them.
fn form_texts(t: &Texts) -> Value {
    let recorded = (t.result_recorded)(7_777, 8_888).replace("7777", "{k}").replace("8888", "{n}");
    json!({
        "form_heading": t.form_heading,
        "required": t.required,
        "choose": t.choose,
        "comment_label": t.comment_label,
        "comment_help": t.comment_help,
        "approve": t.approve,
        "reject": t.reject,
        "decide_hint": t.decide_hint,
        "confirm_approve_title": t.confirm_approve_title,
        "confirm_reject_title": t.confirm_reject_title,
        "confirm_approve_body": t.confirm_approve_body,
        "confirm_reject_body": t.confirm_reject_body,
        "confirm_approve": t.confirm_approve,
        "confirm_reject": t.confirm_reject,
        "cancel": t.cancel,
        "sending": t.sending,
        "result_approved": t.result_approved,
        "result_rejected": t.result_rejected,
        "result_recorded": recorded,
        "err_fix_fields": t.err_fix_fields,
        "err_unavailable": t.err_unavailable,
        "err_server": t.err_server,
    })
}

/// The field types the early form draws (their wire names); a form with any other is left to the app.
fn field_types() -> Vec<String> {
    let all = [
        FieldKind::Text { max_length: None },
        FieldKind::Textarea { max_length: None },
        FieldKind::Choice { options: Vec::new() },
        FieldKind::Number { min: None, max: None },
        FieldKind::Boolean,
    ];
    all.iter()
        .map(|kind| {
            // Exhaustive on purpose: a kind core adds does not compile here until boot-form.js is taught to draw
            // it (then listed) or left to the app (then not listed).
            match kind {
                FieldKind::Text { .. }
                | FieldKind::Textarea { .. }
                | FieldKind::Choice { .. }
                | FieldKind::Number { .. }
                | FieldKind::Boolean => {}
            }
            serde_json::to_value(kind).expect("a field kind serialises")["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOT_JS: &str = include_str!("../boot.js");
    const BOOT_FORM_JS: &str = include_str!("../boot-form.js");

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
    fn every_text_the_early_form_reads_is_one_the_app_gives_in_every_language() {
        let texts = object_of(&boot_form_js(), "TEXTS");
        let used = members(BOOT_FORM_JS, "t");
        assert!(used.len() >= 15, "boot-form.js reads its texts as t.<name>: {used:?}");
        for lang in Locale::ALL {
            let given = texts[lang.as_str()].as_object().unwrap();
            for name in &used {
                assert!(given.get(*name).is_some_and(Value::is_string), "{}: no text {name}", lang.as_str());
            }
        }
        assert!(texts["ja"]["result_recorded"].as_str().unwrap().contains("{k}"));
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
    fn the_scripts_declare_none_of_what_is_written_in_front_of_them() {
        for (script, prelude) in [(BOOT_JS, boot_js()), (BOOT_FORM_JS, boot_form_js())] {
            for line in prelude.lines().filter_map(|l| l.strip_prefix("const ")) {
                let name = &line[..line.find(' ').unwrap()];
                assert!(!script.contains(&format!("const {name} ")), "the script declares {name} itself");
            }
        }
    }

    #[test]
    fn the_early_form_draws_the_kinds_core_knows() {
        assert_eq!(field_types(), ["text", "textarea", "choice", "number", "boolean"]);
    }
}
