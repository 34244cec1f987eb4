//! What a backend reports when a stored value is not one ringi wrote.

/// A stored value that no domain value maps to (a corrupt or foreign D1 row): a 500 with a log line, never
/// a silent default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt stored value in {column}: {value:?}")]
pub struct CorruptValue {
    pub column: &'static str,
    pub value: String,
}

impl CorruptValue {
    pub fn new(column: &'static str, value: impl std::fmt::Display) -> Self {
        Self { column, value: value.to_string() }
    }
}
