//! The feedback form of an approval: the values the user typed, turned into the `feedback` JSON object and
//! checked with the worker's own rule (`ringi_core::domain::form::check`, which `validate` applies to every field),
//! field by field so every problem shows next to its field at once.

use leptos::prelude::*;
use ringi_core::base::json::{FromJson, Members, ReadError};
use ringi_core::domain::form::{check, json_number, FieldKind, FormField, Issue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Choices with at most this many options are radio buttons, longer ones a select.
pub const RADIO_MAX: usize = 5;

/// Why a field's value (or the comment) is refused, translated by the page.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldProblem {
    /// Found here, with the worker's rules.
    Issue(Issue),
    /// A message of the worker (400 with `field`).
    Server(String),
}

/// One field of the form with its reactive value and error.
#[derive(Clone)]
pub struct FieldState {
    pub field: FormField,
    /// Text, textarea, number (as typed) and choice values.
    pub text: RwSignal<String>,
    /// Boolean fields.
    pub checked: RwSignal<bool>,
    pub problem: RwSignal<Option<FieldProblem>>,
}

impl FieldState {
    pub fn new(field: FormField) -> Self {
        Self { field, text: RwSignal::new(String::new()), checked: RwSignal::new(false), problem: RwSignal::new(None) }
    }

    /// The DOM id of the field's control (names are `[A-Za-z0-9_-]{1,64}`, see `validate_form`).
    pub fn dom_id(&self) -> String {
        format!("field-{}", self.field.name)
    }

    /// The JSON value to send, `None` when left empty; `Err` when a number does not parse.
    fn value(&self) -> Result<Option<Value>, Issue> {
        match &self.field.kind {
            FieldKind::Boolean => Ok(Some(Value::Bool(self.checked.get_untracked()))),
            FieldKind::Number { .. } => {
                let raw = self.text.get_untracked();
                let raw = raw.trim();
                if raw.is_empty() {
                    return Ok(None);
                }
                let number = parse_number(raw).and_then(json_number).ok_or(Issue::NotANumber)?;
                Ok(Some(Value::Number(number)))
            }
            FieldKind::Text { .. } | FieldKind::Textarea { .. } | FieldKind::Choice { .. } => {
                let raw = self.text.get_untracked();
                Ok((!raw.trim().is_empty()).then_some(Value::String(raw)))
            }
        }
    }
}

/// A number as `<input type="number">` gives it (`-`, digits, `.`, digits, an exponent), read as JSON, with the
/// parser the app reads its JSON with (`str::parse::<f64>` would add core's own tables, ≈ 12 KB of wasm). JSON
/// refuses the leading zeros and the bare fraction (`.5`) the input allows.
fn parse_number(raw: &str) -> Option<f64> {
    let (sign, rest) = raw.strip_prefix('-').map_or(("", raw), |rest| ("-", rest));
    if !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let digits = rest.trim_start_matches('0');
    let zero = if digits.starts_with(|c: char| c.is_ascii_digit()) { "" } else { "0" };
    ringi_sign_in::json::parse(&format!("{sign}{zero}{digits}"))?.as_f64()
}

/// Checks every field, setting their problems; returns the feedback object when all are fine.
pub fn collect(fields: &[FieldState]) -> Result<Map<String, Value>, ()> {
    let mut feedback = Map::new();
    let mut ok = true;
    for state in fields {
        let checked = state.value().and_then(|value| check(&state.field, value.as_ref()).map(|()| value));
        let problem = match checked {
            Ok(value) => {
                if let Some(v) = value {
                    feedback.insert(state.field.name.clone(), v);
                }
                None
            }
            Err(issue) => Some(FieldProblem::Issue(issue)),
        };
        ok &= problem.is_none();
        state.problem.set(problem);
    }
    ok.then_some(feedback).ok_or(())
}

/// What is stashed in sessionStorage while the user signs in again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub comment: String,
    pub text: Map<String, Value>,
}

impl FromJson for Draft {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self { comment: m.get("comment"), text: m.get("text") })
    }
}

impl Draft {
    /// Nothing typed: no comment, every text empty, every box unticked.
    pub fn is_empty(&self) -> bool {
        self.comment.is_empty()
            && self.text.values().all(|v| matches!(v, Value::String(s) if s.is_empty()) || v == &Value::Bool(false))
    }
}

pub fn draft_of(fields: &[FieldState], comment: &str) -> Draft {
    let mut text = Map::new();
    for s in fields {
        let v = match s.field.kind {
            FieldKind::Boolean => Value::Bool(s.checked.get_untracked()),
            _ => Value::String(s.text.get_untracked()),
        };
        text.insert(s.field.name.clone(), v);
    }
    Draft { comment: comment.to_owned(), text }
}

pub fn restore(fields: &[FieldState], draft: &Draft) {
    for s in fields {
        match (draft.text.get(&s.field.name), &s.field.kind) {
            (Some(Value::Bool(b)), FieldKind::Boolean) => s.checked.set(*b),
            (Some(Value::String(t)), kind) if !matches!(kind, FieldKind::Boolean) => s.text.set(t.clone()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn states() -> Vec<FieldState> {
        let fields: Vec<FormField> = serde_json::from_value(json!([
            {"name": "reason", "label": "Reason", "type": "textarea", "required": true, "maxLength": 5},
            {"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"]},
            {"name": "amount", "label": "Amount", "type": "number", "min": 0, "max": 100},
            {"name": "urgent", "label": "Urgent", "type": "boolean"}
        ]))
        .unwrap();
        fields.into_iter().map(FieldState::new).collect()
    }

    #[test]
    fn mirrors_the_worker_rules() {
        let issue = |s: &FieldState| match s.problem.get_untracked() {
            Some(FieldProblem::Issue(i)) => Some(i),
            _ => None,
        };
        let s = states();
        assert!(collect(&s).is_err());
        assert_eq!(issue(&s[0]), Some(Issue::Required));
        s[0].text.set("   ".into());
        assert!(collect(&s).is_err(), "blank is empty");
        s[0].text.set("toolong".into());
        assert!(collect(&s).is_err());
        assert_eq!(issue(&s[0]), Some(Issue::TooLong(5)));
        s[0].text.set("fine".into());
        s[2].text.set("500".into());
        assert!(collect(&s).is_err());
        assert_eq!(issue(&s[2]), Some(Issue::OutOfRange { min: Some(0.0), max: Some(100.0) }));
        s[2].text.set("1e".into());
        assert!(collect(&s).is_err());
        assert_eq!(issue(&s[2]), Some(Issue::NotANumber));
        s[2].text.set("7".into());
        s[1].text.set("high".into());
        s[3].checked.set(true);
        let feedback = collect(&s).unwrap();
        assert_eq!(Value::Object(feedback), json!({"reason": "fine", "risk": "high", "amount": 7, "urgent": true}));
        assert!(s.iter().all(|f| f.problem.get_untracked().is_none()));
        s[2].text.set("2.5".into());
        assert_eq!(collect(&s).unwrap()["amount"], json!(2.5));
    }

    #[test]
    fn numbers_read_as_a_number_input_writes_them() {
        for (raw, n) in [
            ("7", 7.0),
            ("-2.5", -2.5),
            ("007", 7.0),
            ("0", 0.0),
            ("-0.25", -0.25),
            (".5", 0.5),
            ("1e3", 1000.0),
            ("2.5E-1", 0.25),
            ("00e5", 0.0),
        ] {
            assert_eq!(parse_number(raw), Some(n), "{raw}");
        }
        for raw in ["-", "+1", "e5", "1e", "1.", ".", "--1", "1,5", "0x10", "inf", "NaN", "1 2", "1e400"] {
            assert_eq!(parse_number(raw), None, "{raw}");
        }
    }

    #[test]
    fn a_stashed_draft_reads_as_serde_reads_it() {
        ringi_core::base::json::agrees::<Draft>(json!({"comment": "c", "text": {"reason": "why", "urgent": true}}));
    }

    #[test]
    fn drafts_round_trip() {
        let s = states();
        s[0].text.set("why".into());
        s[3].checked.set(true);
        let draft = draft_of(&s, "a comment");
        let text = serde_json::to_string(&draft).unwrap();
        let again = states();
        restore(&again, &ringi_sign_in::json::from_str(&text).unwrap());
        assert_eq!(again[0].text.get_untracked(), "why");
        assert!(again[3].checked.get_untracked());
        assert_eq!(draft.comment, "a comment");
        assert!(!draft.is_empty());
        assert!(draft_of(&states(), "").is_empty(), "nothing typed: nothing to keep");
    }
}
