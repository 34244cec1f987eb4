//! JSON request bodies: deserialized into serde DTOs, with the failing field named in the 400.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::error::ApiError;

/// The top-level member a path (`approvers[1].email`) starts in.
pub(crate) fn top_field(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// The path up to and including the first array index: `approvers[1].email` → `approvers[1]`.
pub(crate) fn first_item(path: &str) -> &str {
    path.find(']').map_or(path, |i| &path[..=i])
}

/// Parses the body as JSON (a syntax error is `malformed_body`).
pub(crate) fn json_value(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::MalformedBody(e.to_string()))
}

/// Deserializes a JSON object into `T`. A member `T` does not know is `"is not a known field"`; any other
/// failure goes to `explain(path, serde's message)`, which says what the field must be.
pub(crate) fn from_object<T: DeserializeOwned>(
    v: Value,
    explain: impl Fn(&str, String) -> ApiError,
) -> Result<T, ApiError> {
    if !v.is_object() {
        // A struct also deserializes from an array: only an object is a body.
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // serde's wording for `deny_unknown_fields`; the path ends in the unknown member.
        if message.starts_with("unknown field") {
            ApiError::invalid(path, "is not a known field")
        } else {
            explain(&path, message)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        a: Option<Vec<String>>,
    }

    fn field(v: Value) -> String {
        match from_object::<Probe>(v, |path, _| ApiError::invalid(path, "explained")).unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn names_the_failing_member() {
        assert_eq!(field(serde_json::json!({"b": 1})), "b");
        assert_eq!(field(serde_json::json!({"a": ["x", 2]})), "a[1]");
        assert_eq!(field(serde_json::json!(["x"])), "body");
        assert_eq!((top_field("approvers[1].email"), first_item("approvers[1].email")), ("approvers", "approvers[1]"));
        assert!(matches!(json_value(b"{"), Err(ApiError::MalformedBody(_))));
    }
}
