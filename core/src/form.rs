//! The optional structured feedback form of an approval, and validation of the answers against it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ApiError;

pub const MAX_FIELDS: usize = 30;
pub const MAX_OPTIONS: usize = 50;
pub const TEXT_MAX_CHARS: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// No deny_unknown_fields: serde does not support it together with `flatten`.
#[serde(rename_all = "camelCase")]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FieldKind {
    Text {
        #[serde(default, rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
    },
    Textarea {
        #[serde(default, rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
    },
    Choice {
        options: Vec<String>,
    },
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
    },
    Boolean,
}

/// Most characters a text/textarea answer may have: the field's `maxLength`, never above [`TEXT_MAX_CHARS`].
/// The SPA uses the same rule for its `maxlength` attributes and hints.
pub fn text_limit(max_length: Option<usize>) -> usize {
    max_length.unwrap_or(TEXT_MAX_CHARS).min(TEXT_MAX_CHARS)
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
        if f.label.trim().is_empty() || f.label.chars().count() > 200 {
            return Err(ApiError::invalid(at("label"), "must be 1-200 characters"));
        }
        match &f.kind {
            FieldKind::Choice { options } => {
                if options.is_empty() || options.len() > MAX_OPTIONS {
                    return Err(ApiError::invalid(at("options"), format!("must have 1-{MAX_OPTIONS} options")));
                }
                if options.iter().any(|o| o.is_empty() || o.chars().count() > 200) {
                    return Err(ApiError::invalid(at("options"), "options must be 1-200 characters"));
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

/// Checks a decision's feedback against the approval's form. Without a form, any JSON object is accepted
/// (size limits are applied by the caller).
pub fn validate_feedback(fields: &[FormField], feedback: &Map<String, Value>) -> Result<(), ApiError> {
    if fields.is_empty() {
        return Ok(());
    }
    if let Some(unknown) = feedback.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
        return Err(ApiError::invalid(format!("feedback.{unknown}"), "is not a field of this approval's form"));
    }
    for f in fields {
        let at = format!("feedback.{}", f.name);
        let value = feedback.get(&f.name).filter(|v| !v.is_null() && v.as_str() != Some(""));
        let Some(value) = value else {
            if f.required {
                return Err(ApiError::invalid(at, "is required"));
            }
            continue;
        };
        match &f.kind {
            FieldKind::Text { max_length } | FieldKind::Textarea { max_length } => {
                let s = value.as_str().ok_or_else(|| ApiError::invalid(&at, "must be text"))?;
                let max = text_limit(*max_length);
                if s.chars().count() > max {
                    return Err(ApiError::invalid(at, format!("must be at most {max} characters")));
                }
            }
            FieldKind::Choice { options } => {
                let s = value.as_str().ok_or_else(|| ApiError::invalid(&at, "must be one of the options"))?;
                if !options.iter().any(|o| o == s) {
                    return Err(ApiError::invalid(at, "must be one of the options"));
                }
            }
            FieldKind::Number { min, max } => {
                let n = value.as_f64().ok_or_else(|| ApiError::invalid(&at, "must be a number"))?;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(ApiError::invalid(at, "is out of range"));
                }
            }
            FieldKind::Boolean => {
                if !value.is_boolean() {
                    return Err(ApiError::invalid(at, "must be true or false"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
