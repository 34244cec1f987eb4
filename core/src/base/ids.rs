//! Identifiers that cross trust boundaries: the public approval ID and the secret task token.

use std::fmt;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};

use crate::base::error::ApiError;

/// Random bytes behind a generated approval ID: 128 bits, 22 URL-safe characters.
pub const APPROVAL_ID_RANDOM_BYTES: usize = 16;
/// Shortest ID looked up (IDs of approvals registered before the client-chosen rule tightened).
const APPROVAL_ID_MIN: usize = 16;
const APPROVAL_ID_MAX: usize = 64;
/// Shortest client-chosen ID: 22 URL-safe characters can carry 132 bits, as many as a generated ID.
pub const CHOSEN_ID_MIN: usize = 22;
/// Fewest different characters in a client-chosen ID: random IDs of 22 characters have ≈ 19, so this only
/// turns away guessable ones (`aaaa…`, `0000…0001`, words padded to length).
pub const CHOSEN_ID_MIN_DISTINCT: usize = 10;

/// The short, unguessable handle users see in `/a/{id}`. Client-chosen IDs must look like generated ones
/// ([`ApprovalId::parse_chosen`]) so that registrants cannot squat guessable IDs.
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

    /// A registrant's own `approvalId`: at least [`CHOSEN_ID_MIN`] URL-safe characters with at least
    /// [`CHOSEN_ID_MIN_DISTINCT`] different ones (≥ 96 bits if drawn at random, e.g. 16 random bytes in
    /// base64url), so that an ID cannot be guessed or taken ahead of the workflow that would use it.
    pub fn parse_chosen(raw: &str) -> Result<Self, ApiError> {
        let rule = || {
            ApiError::invalid(
                "approvalId",
                format!(
                    "must be {CHOSEN_ID_MIN}-{APPROVAL_ID_MAX} characters of A-Z a-z 0-9 - _ with at least \
                     {CHOSEN_ID_MIN_DISTINCT} different characters (e.g. 16 random bytes, base64url), or left out"
                ),
            )
        };
        let id = Self::parse(raw).map_err(|_| rule())?;
        let distinct = raw.bytes().collect::<std::collections::BTreeSet<u8>>().len();
        if raw.len() < CHOSEN_ID_MIN || distinct < CHOSEN_ID_MIN_DISTINCT {
            return Err(rule());
        }
        Ok(id)
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
        crate::base::hex::hex_sha256(self.0.as_bytes())
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
    fn client_chosen_ids_need_the_entropy_of_a_generated_one() {
        let generated = ApprovalId::from_random(*b"\x8a\x13\xf0\x42\x99\x01\xc7\x5e\x6b\x2d\xe4\x70\x38\xaf\x1c\xd9");
        assert_eq!(ApprovalId::parse_chosen(generated.as_str()).unwrap(), generated);
        assert!(ApprovalId::parse_chosen("wf-Q2hhbmdlIHJlcXVlc3QgMQ").is_ok());
        assert!(ApprovalId::parse_chosen("3f2b8c1e-9d4a-4e7b-a6c5-0b1d2e3f4a5b").is_ok(), "a UUID");
        for bad in [
            "abcdefghijklmnop",             // 16: fine to look up, too short to choose
            "openapi-idem-0001",            // guessable and short
            "abcdefghijklmnopqrstu",        // 21
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaa", // long but one character
            "0000000000000000000000000001", // a counter
            "approval-approval-approval",   // a word, padded
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa/..",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(ApprovalId::parse_chosen(bad), Err(ApiError::Invalid { field, .. }) if field == "approvalId"),
                "{bad} must be refused"
            );
        }
        // Lookups stay lenient: links to approvals registered under the earlier rule keep working.
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
