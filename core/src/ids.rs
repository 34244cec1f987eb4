//! Identifiers that cross trust boundaries: the public approval ID and the secret task token.

use std::fmt;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Random bytes behind a generated approval ID: 128 bits, 22 URL-safe characters.
pub const APPROVAL_ID_RANDOM_BYTES: usize = 16;
const APPROVAL_ID_MIN: usize = 16;
const APPROVAL_ID_MAX: usize = 64;

/// The short, unguessable handle users see in `/a/{id}`. Client-chosen IDs must look like generated ones
/// (URL-safe, ≥ 16 chars) so that they cannot be guessed either.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ApprovalId(String);

impl ApprovalId {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let ok_len = (APPROVAL_ID_MIN..=APPROVAL_ID_MAX).contains(&raw.len());
        let ok_chars = raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok_len && ok_chars {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ApiError::invalid(
                "approvalId",
                format!("must be {APPROVAL_ID_MIN}-{APPROVAL_ID_MAX} characters of A-Z a-z 0-9 - _"),
            ))
        }
    }

    /// Builds an ID from platform randomness (the caller owns the RNG: WebCrypto in the worker).
    pub fn from_random(bytes: [u8; APPROVAL_ID_RANDOM_BYTES]) -> Self {
        Self(URL_SAFE_NO_PAD.encode(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ApprovalId {
    type Error = ApiError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<ApprovalId> for String {
    fn from(value: ApprovalId) -> Self {
        value.0
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApprovalId({})", self.0)
    }
}

/// Step Functions task token: whoever holds it can resume the workflow. It never leaves the server side,
/// so it has no `Display`, no `Serialize`, and a redacted `Debug`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct TaskToken(String);

/// SendTaskSuccess/SendTaskFailure accept 1–2048 characters.
pub const TASK_TOKEN_MAX: usize = 2048;

impl TaskToken {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let len = raw.chars().count();
        if len == 0 || len > TASK_TOKEN_MAX {
            return Err(ApiError::invalid("taskToken", format!("must be 1-{TASK_TOKEN_MAX} characters")));
        }
        if raw.chars().any(char::is_control) {
            return Err(ApiError::invalid("taskToken", "must not contain control characters"));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The only way to read the secret; call sites are the storage adapter and the callback body.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// SHA-256 fingerprint (hex), kept after the token is dropped so re-registration can be compared.
    pub fn fingerprint(&self) -> String {
        crate::hex_sha256(self.0.as_bytes())
    }
}

impl TryFrom<String> for TaskToken {
    type Error = ApiError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl fmt::Debug for TaskToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskToken(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_22_url_safe_chars_and_parse_back() {
        let id = ApprovalId::from_random([0xfb; APPROVAL_ID_RANDOM_BYTES]);
        assert_eq!(id.as_str().len(), 22);
        assert!(!id.as_str().contains(['+', '/', '=']));
        assert_eq!(ApprovalId::parse(id.as_str()).unwrap(), id);
    }

    #[test]
    fn approval_id_rejects_short_long_and_unsafe() {
        assert!(ApprovalId::parse("short").is_err());
        assert!(ApprovalId::parse(&"a".repeat(65)).is_err());
        assert!(ApprovalId::parse("aaaaaaaaaaaaaaaa/..").is_err());
        assert!(ApprovalId::parse("aaaaaaaaaaaaaaa%20").is_err());
        assert!(ApprovalId::parse("abcdefghijklmnop").is_ok());
    }

    #[test]
    fn task_token_limits_and_redaction() {
        assert!(TaskToken::parse("").is_err());
        assert!(TaskToken::parse(&"x".repeat(2049)).is_err());
        assert!(TaskToken::parse("a\nb").is_err());
        let t = TaskToken::parse(&"x".repeat(2048)).unwrap();
        assert_eq!(format!("{t:?}"), "TaskToken(<redacted>)");
        assert_eq!(t.fingerprint().len(), 64);
    }
}
