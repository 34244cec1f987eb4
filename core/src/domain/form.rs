//! The optional structured feedback form of an approval, and validation of the answers against it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::base::error::ApiError;
use crate::base::json::{self, FromJson, Members, Placeholder, ReadError};
use crate::base::text::strip_invisible;

pub const MAX_FIELDS: usize = 30;
pub const MAX_OPTIONS: usize = 50;
pub const TEXT_MAX_CHARS: usize = 10_000;
/// Labels and choice options.
pub const LABEL_MAX_CHARS: usize = 200;
/// A field's `help` text (shown under the field).
pub const HELP_MAX_CHARS: usize = 500;

/// The request field a decision's 400 names in `error.field`: the comment, or one answer of the feedback
/// form (`feedback.<name>`). The worker writes these paths and the SPA reads them (to show the message next
/// to that field), both through this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionField<'a> {
    Comment,
    Feedback(&'a str),
}

impl<'a> DecisionField<'a> {
    const COMMENT: &'static str = "comment";
    const FEEDBACK_PREFIX: &'static str = "feedback.";

    /// The `error.field` value.
    pub fn path(self) -> String {
        match self {
            Self::Comment => Self::COMMENT.to_owned(),
            Self::Feedback(name) => format!("{}{name}", Self::FEEDBACK_PREFIX),
        }
    }

    /// Reads an `error.field` value; `None` for fields of other requests (`approvers[0]`, `cursor`, …).
    pub fn parse(path: &'a str) -> Option<Self> {
        if path == Self::COMMENT {
            return Some(Self::Comment);
        }
        path.strip_prefix(Self::FEEDBACK_PREFIX).map(Self::Feedback)
    }
}

/// Removes [`is_invisible_control`] characters from every one-line text of a form (labels, options, help).
pub fn strip_form(fields: &mut [FormField]) {
    for f in fields {
        f.label = strip_invisible(&f.label);
        f.help = f.help.as_deref().map(strip_invisible);
        if let FieldKind::Choice { options } = &mut f.kind {
            for o in options.iter_mut() {
                *o = strip_invisible(o);
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Read through the flat `FieldWire`: a derived `flatten` of an internally tagged enum buffers every field
// into serde's generic content first, which is most of the SPA's cost of reading an approval's form.
#[serde(rename_all = "camelCase", try_from = "FieldWire")]
pub struct FormField {
    pub name: String,
    pub label: String,
    #[serde(flatten)]
    pub kind: FieldKind,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FieldKind {
    Text {
        #[serde(rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
    },
    Textarea {
        #[serde(rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
    },
    Choice {
        options: Vec<String>,
    },
    Number {
        #[serde(skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
    },
    Boolean,
}

/// A form field as written: every member of every kind side by side, the kind's own checked by
/// `TryFrom` (members of other kinds are ignored, as they always were).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FieldWire {
    name: String,
    label: String,
    #[serde(rename = "type")]
    kind: KindTag,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    help: Option<String>,
    #[serde(default)]
    max_length: Option<usize>,
    #[serde(default)]
    options: Option<Vec<String>>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindTag {
    Text,
    Textarea,
    Choice,
    Number,
    Boolean,
}

impl FromJson for KindTag {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let parse = |name: &str| match name {
            "text" => Some(Self::Text),
            "textarea" => Some(Self::Textarea),
            "choice" => Some(Self::Choice),
            "number" => Some(Self::Number),
            "boolean" => Some(Self::Boolean),
            _ => None,
        };
        json::name(v, parse, "text, textarea, choice, number or boolean")
    }
}

impl Placeholder for KindTag {
    fn placeholder() -> Self {
        Self::Text
    }
}

impl FromJson for FormField {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        let wire = m.done(FieldWire {
            name: m.get("name"),
            label: m.get("label"),
            kind: m.get("type"),
            required: m.or_default("required"),
            help: m.or_default("help"),
            max_length: m.or_default("maxLength"),
            options: m.or_default("options"),
            min: m.or_default("min"),
            max: m.or_default("max"),
        })?;
        Self::try_from(wire).map_err(ReadError::new)
    }
}

impl TryFrom<FieldWire> for FormField {
    type Error = &'static str;

    fn try_from(w: FieldWire) -> Result<Self, Self::Error> {
        let kind = match w.kind {
            KindTag::Text => FieldKind::Text { max_length: w.max_length },
            KindTag::Textarea => FieldKind::Textarea { max_length: w.max_length },
            KindTag::Choice => FieldKind::Choice { options: w.options.ok_or("missing field `options`")? },
            KindTag::Number => FieldKind::Number { min: w.min, max: w.max },
            KindTag::Boolean => FieldKind::Boolean,
        };
        Ok(Self { name: w.name, label: w.label, kind, required: w.required, help: w.help })
    }
}

/// Most characters a text/textarea answer may have: the field's `maxLength`, never above [`TEXT_MAX_CHARS`].
/// The SPA uses the same rule for its `maxlength` attributes and hints.
pub fn text_limit(max_length: Option<usize>) -> usize {
    max_length.unwrap_or(TEXT_MAX_CHARS).min(TEXT_MAX_CHARS)
}

/// A number of a feedback form as JSON writes it: a whole number as an integer (`7`, not `7.0`) while it is one
/// exactly, else as a float; `None` for infinities and NaN. The SPA sends answers and writes bounds through it.
pub fn json_number(n: f64) -> Option<Number> {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Some(Number::from(n as i64))
    } else {
        Number::from_f64(n)
    }
}

fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks a form definition at registration.
pub fn validate_form(fields: &[FormField]) -> Result<(), ApiError> {
    if fields.len() > MAX_FIELDS {
        return Err(ApiError::invalid("form", format!("at most {MAX_FIELDS} fields")));
    }
    for (i, f) in fields.iter().enumerate() {
        let at = |what: &str| format!("form[{i}].{what}");
        if !valid_name(&f.name) {
            return Err(ApiError::invalid(at("name"), "must be 1-64 characters of A-Z a-z 0-9 _ -"));
        }
        if fields[..i].iter().any(|g| g.name == f.name) {
            return Err(ApiError::invalid(at("name"), "duplicate field name"));
        }
        if f.label.trim().is_empty() || f.label.chars().count() > LABEL_MAX_CHARS {
            return Err(ApiError::invalid(at("label"), format!("must be 1-{LABEL_MAX_CHARS} characters")));
        }
        if f.help.as_deref().is_some_and(|h| h.chars().count() > HELP_MAX_CHARS) {
            return Err(ApiError::invalid(at("help"), format!("must be at most {HELP_MAX_CHARS} characters")));
        }
        match &f.kind {
            FieldKind::Choice { options } => {
                if options.is_empty() || options.len() > MAX_OPTIONS {
                    return Err(ApiError::invalid(at("options"), format!("must have 1-{MAX_OPTIONS} options")));
                }
                if options.iter().any(|o| o.is_empty() || o.chars().count() > LABEL_MAX_CHARS) {
                    return Err(ApiError::invalid(
                        at("options"),
                        format!("options must be 1-{LABEL_MAX_CHARS} characters"),
                    ));
                }
                if options.iter().enumerate().any(|(j, o)| options[..j].contains(o)) {
                    return Err(ApiError::invalid(at("options"), "duplicate option"));
                }
            }
            FieldKind::Number { min: Some(lo), max: Some(hi) } if lo > hi => {
                return Err(ApiError::invalid(at("min"), "min is greater than max"));
            }
            FieldKind::Text { max_length: Some(0) } | FieldKind::Textarea { max_length: Some(0) } => {
                return Err(ApiError::invalid(at("maxLength"), "must be positive"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why one feedback value is refused. The SPA translates these; the worker sends [`Issue::message`].
#[derive(Debug, Clone, PartialEq)]
pub enum Issue {
    Required,
    NotText,
    /// Longer than this many characters.
    TooLong(usize),
    NotAnOption,
    NotANumber,
    OutOfRange {
        min: Option<f64>,
        max: Option<f64>,
    },
    NotABoolean,
    /// A key that names no field of the form.
    UnknownField,
}

impl Issue {
    /// The API's wording (`error.message` of the 400).
    pub fn message(&self) -> String {
        match self {
            Self::Required => "is required".into(),
            Self::NotText => "must be text".into(),
            Self::TooLong(max) => format!("must be at most {max} characters"),
            Self::NotAnOption => "must be one of the options".into(),
            Self::NotANumber => "must be a number".into(),
            Self::OutOfRange { .. } => "is out of range".into(),
            Self::NotABoolean => "must be true or false".into(),
            Self::UnknownField => "is not a field of this approval's form".into(),
        }
    }
}

/// One refused feedback value: the field's `name` and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldIssue {
    pub field: String,
    pub issue: Issue,
}

impl From<FieldIssue> for ApiError {
    fn from(i: FieldIssue) -> Self {
        ApiError::invalid(DecisionField::Feedback(&i.field).path(), i.issue.message())
    }
}

/// Feedback that passed [`validate`]: every key a field of the form, every value as its field requires.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedFeedback(Map<String, Value>);

impl ValidatedFeedback {
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
}

/// Checks one field's value. `None`, `null` and `""` are "no answer" (fine unless the field is required).
pub fn check(field: &FormField, value: Option<&Value>) -> Result<(), Issue> {
    let Some(value) = value.filter(|v| !v.is_null() && v.as_str() != Some("")) else {
        return if field.required { Err(Issue::Required) } else { Ok(()) };
    };
    match &field.kind {
        FieldKind::Text { max_length } | FieldKind::Textarea { max_length } => {
            let max = text_limit(*max_length);
            match value.as_str() {
                None => Err(Issue::NotText),
                Some(s) if s.chars().count() > max => Err(Issue::TooLong(max)),
                Some(_) => Ok(()),
            }
        }
        FieldKind::Choice { options } => match value.as_str() {
            Some(s) if options.iter().any(|o| o == s) => Ok(()),
            _ => Err(Issue::NotAnOption),
        },
        FieldKind::Number { min, max } => {
            let n = value.as_f64().ok_or(Issue::NotANumber)?;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(Issue::OutOfRange { min: *min, max: *max });
            }
            Ok(())
        }
        FieldKind::Boolean if value.is_boolean() => Ok(()),
        FieldKind::Boolean => Err(Issue::NotABoolean),
    }
}

/// Checks a decision's feedback against the approval's form, reporting every refused field at once:
/// keys the form does not have first, then the fields in form order. Without a form, any JSON object is
/// accepted (size limits are applied by the caller).
pub fn validate(fields: &[FormField], feedback: &Map<String, Value>) -> Result<ValidatedFeedback, Vec<FieldIssue>> {
    if fields.is_empty() {
        return Ok(ValidatedFeedback(feedback.clone()));
    }
    let unknown = feedback
        .keys()
        .filter(|k| !fields.iter().any(|f| &f.name == *k))
        .map(|k| FieldIssue { field: k.clone(), issue: Issue::UnknownField });
    let refused = fields
        .iter()
        .filter_map(|f| check(f, feedback.get(&f.name)).err().map(|issue| FieldIssue { field: f.name.clone(), issue }));
    let issues: Vec<FieldIssue> = unknown.chain(refused).collect();
    if issues.is_empty() {
        Ok(ValidatedFeedback(feedback.clone()))
    } else {
        Err(issues)
    }
}

/// [`validate`] as the API answers it: the first issue, as a 400 naming `feedback.<field>`.
pub fn validate_feedback(fields: &[FormField], feedback: &Map<String, Value>) -> Result<(), ApiError> {
    validate(fields, feedback)
        .map(drop)
        .map_err(|issues| issues.into_iter().next().map_or(ApiError::Internal, Into::into))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::text::is_invisible_control;
    use serde_json::json;

    fn form() -> Vec<FormField> {
        serde_json::from_value(json!([
            {"name": "reason", "label": "Reason", "type": "textarea", "required": true, "maxLength": 10},
            {"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"]},
            {"name": "amount", "label": "Amount", "type": "number", "min": 0, "max": 100},
            {"name": "urgent", "label": "Urgent", "type": "boolean"}
        ]))
        .unwrap()
    }

    #[test]
    fn form_definition_round_trips_and_validates() {
        let f = form();
        validate_form(&f).unwrap();
        assert_eq!(serde_json::from_value::<Vec<FormField>>(serde_json::to_value(&f).unwrap()).unwrap(), f);
        let mut dup = f.clone();
        dup[1].name = "reason".into();
        assert_eq!(validate_form(&dup).unwrap_err(), ApiError::invalid("form[1].name", "duplicate field name"));
        assert!(serde_json::from_value::<FormField>(json!({"name": "x", "label": "X", "type": "date"})).is_err());
        let bad_choice: Vec<FormField> =
            serde_json::from_value(json!([{"name": "c", "label": "C", "type": "choice", "options": []}])).unwrap();
        assert!(validate_form(&bad_choice).is_err());
    }

    #[test]
    fn a_field_is_read_by_its_type_and_members_of_other_types_are_ignored() {
        let read = |v: Value| serde_json::from_value::<FormField>(v).map_err(|e| e.to_string());
        let text = read(json!({"name": "t", "label": "T", "type": "text", "options": ["x"], "min": 1})).unwrap();
        assert_eq!(text.kind, FieldKind::Text { max_length: None });
        assert!(!text.required && text.help.is_none());
        let number = read(json!({"name": "n", "label": "N", "type": "number", "max": 2.5, "maxLength": 3})).unwrap();
        assert_eq!(number.kind, FieldKind::Number { min: None, max: Some(2.5) });
        assert_eq!(read(json!({"name": "c", "label": "C", "type": "choice"})).unwrap_err(), "missing field `options`");
        assert!(read(json!({"name": "x", "label": "X"})).unwrap_err().starts_with("missing field `type`"));
        let unknown = read(json!({"name": "x", "label": "X", "type": "date"})).unwrap_err();
        assert!(unknown.starts_with("unknown variant `date`, expected one of `text`"), "{unknown}");
        assert!(read(json!({"name": "x", "label": "X", "type": "text", "maxLength": -1})).is_err());
    }

    #[test]
    fn form_numbers_are_integers_when_whole() {
        assert_eq!(json_number(7.0).map(|n| n.to_string()).as_deref(), Some("7"));
        assert_eq!(json_number(-0.0).map(|n| n.to_string()).as_deref(), Some("0"));
        assert_eq!(json_number(2.5).map(|n| n.to_string()).as_deref(), Some("2.5"));
        assert!(json_number(1e20).is_some_and(|n| n.is_f64()), "beyond exact integers: a float");
        assert!(json_number(f64::NAN).is_none() && json_number(f64::INFINITY).is_none());
    }

    #[test]
    fn feedback_rules() {
        let f = form();
        let ok = |v: serde_json::Value| validate_feedback(&f, v.as_object().unwrap());
        ok(json!({"reason": "fine", "risk": "low", "amount": 5, "urgent": true})).unwrap();
        assert_eq!(ok(json!({})).unwrap_err(), ApiError::invalid("feedback.reason", "is required"));
        assert_eq!(ok(json!({"reason": ""})).unwrap_err(), ApiError::invalid("feedback.reason", "is required"));
        assert!(ok(json!({"reason": "x".repeat(11)})).is_err());
        assert!(ok(json!({"reason": "a", "risk": "medium"})).is_err());
        assert!(ok(json!({"reason": "a", "amount": 101})).is_err());
        assert!(ok(json!({"reason": "a", "amount": "5"})).is_err());
        assert!(ok(json!({"reason": "a", "urgent": "yes"})).is_err());
        assert!(ok(json!({"reason": "a", "extra": 1})).is_err());
        validate_feedback(&[], json!({"anything": [1, 2]}).as_object().unwrap()).unwrap();
    }

    #[test]
    fn every_refused_field_is_reported_once() {
        let f = form();
        let issues =
            validate(&f, json!({"risk": "medium", "amount": "5", "urgent": true, "extra": 1}).as_object().unwrap())
                .unwrap_err();
        let got: Vec<(&str, &Issue)> = issues.iter().map(|i| (i.field.as_str(), &i.issue)).collect();
        assert_eq!(
            got,
            [
                ("extra", &Issue::UnknownField),
                ("reason", &Issue::Required),
                ("risk", &Issue::NotAnOption),
                ("amount", &Issue::NotANumber)
            ]
        );
        assert_eq!(check(&f[0], Some(&json!("x".repeat(11)))), Err(Issue::TooLong(10)));
        assert_eq!(check(&f[2], Some(&json!(101))), Err(Issue::OutOfRange { min: Some(0.0), max: Some(100.0) }));
        assert_eq!(check(&f[3], Some(&json!("yes"))), Err(Issue::NotABoolean));
        assert_eq!(check(&f[1], Some(&Value::Null)), Ok(()), "null is no answer");
        let ok = validate(&f, json!({"reason": "fine", "urgent": false}).as_object().unwrap()).unwrap();
        assert_eq!(ok.as_map().len(), 2);
    }

    #[test]
    fn help_text_is_capped() {
        let mut f = form();
        f[0].help = Some("h".repeat(HELP_MAX_CHARS));
        validate_form(&f).unwrap();
        f[0].help = Some("h".repeat(HELP_MAX_CHARS + 1));
        assert_eq!(validate_form(&f).unwrap_err(), ApiError::invalid("form[0].help", "must be at most 500 characters"));
    }

    #[test]
    fn bidi_and_zero_width_characters_are_stripped_from_labels_options_and_help() {
        let mut f: Vec<FormField> = serde_json::from_value(json!([
            {"name": "r", "label": "Ri\u{202E}sk\u{200B}", "type": "choice",
             "options": ["lo\u{2066}w\u{2069}", "\u{FEFF}high\u{061C}", "ok\u{200F}\u{202A}"], "help": "a\u{200D}b"}
        ]))
        .unwrap();
        strip_form(&mut f);
        assert_eq!(f[0].label, "Risk");
        assert_eq!(f[0].help.as_deref(), Some("ab"));
        assert_eq!(f[0].kind, FieldKind::Choice { options: vec!["low".into(), "high".into(), "ok".into()] });
        for c in ['\u{200B}', '\u{200F}', '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{FEFF}', '\u{061C}'] {
            assert!(is_invisible_control(c), "{:04X}", c as u32);
        }
        assert!(!is_invisible_control('\u{2010}') && !is_invisible_control('稟'));
        // An option that was only invisible characters, or equal to another once stripped, is refused.
        let mut g: Vec<FormField> = serde_json::from_value(json!([
            {"name": "c", "label": "C", "type": "choice", "options": ["a", "a\u{200B}"]}
        ]))
        .unwrap();
        strip_form(&mut g);
        assert_eq!(validate_form(&g).unwrap_err(), ApiError::invalid("form[0].options", "duplicate option"));
        let mut h: Vec<FormField> =
            serde_json::from_value(json!([{"name": "c", "label": "\u{202E}", "type": "text"}])).unwrap();
        strip_form(&mut h);
        assert!(validate_form(&h).is_err());
    }
}
