//! D1's failure rules (platform-free): which D1 errors are worth retrying and the retry budget (the fault
//! switch that makes chosen D1 calls fail the way D1 fails is `crate::dev::faults`).

use crate::adapters::sfn::RetryPolicy;

/// What a D1 error message says about retrying the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum D1ErrorKind {
    /// The storage node or the network hiccupped (Cloudflare's list of retryable D1 errors, plus timeouts
    /// and overload): the same statement may succeed a moment later. Only reads and idempotent writes are
    /// retried.
    Transient,
    /// The statement itself is wrong for the data (constraint, schema, syntax, size): retrying repeats it.
    Permanent,
    /// Anything else: not retried, reported as "storage unavailable" (503).
    Unknown,
}

const PERMANENT: &[&str] = &[
    "constraint",
    "syntax error",
    "no such table",
    "no such column",
    "sqlite_toobig",
    "too big",
    "sqlite_mismatch",
    "datatype mismatch",
    "has no column",
    "wrong number of bindings",
];

const TRANSIENT: &[&str] = &[
    "network connection lost",
    "storage caused object to be reset",
    "reset because its code was updated",
    "object to be reset",
    "overloaded",
    "too many requests queued",
    "timed out",
    "timeout",
    "transient issue",
    "internal error",
    "connection reset",
    "database is locked",
    "sqlite_busy",
    "unavailable",
];

/// Classifies a D1 error message (the `Display` of the platform error; prefixes like `D1_ERROR:` are
/// common to every kind and say nothing on their own).
pub fn classify_d1_error(message: &str) -> D1ErrorKind {
    let m = message.to_ascii_lowercase();
    if TRANSIENT.iter().any(|t| m.contains(t)) {
        return D1ErrorKind::Transient;
    }
    if PERMANENT.iter().any(|p| m.contains(p)) {
        return D1ErrorKind::Permanent;
    }
    D1ErrorKind::Unknown
}

/// Retries of one D1 call inside a request: 3 tries, full jitter, 25 ms base, 250 ms cap — at most
/// ≈ 0.5 s of waiting on top of the tries themselves. One try may hang; after 4 s it counts as a (transient)
/// timeout.
pub const D1_RETRY: RetryPolicy = RetryPolicy { max_attempts: 3, base_ms: 25, cap_ms: 250, attempt_timeout_ms: 4_000 };

/// The time one try of a D1 call gets.
pub const D1_TRY_TIMEOUT_MS: u64 = D1_RETRY.attempt_timeout_ms;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::faults::injected_message;

    #[test]
    fn d1_messages_are_classified() {
        use D1ErrorKind::*;
        assert_eq!(classify_d1_error("D1_ERROR: Network connection lost."), Transient);
        assert_eq!(classify_d1_error("D1_ERROR: Durable Object reset because its code was updated."), Transient);
        assert_eq!(
            classify_d1_error("D1_ERROR: Internal error while starting up D1 DB storage caused object to be reset."),
            Transient
        );
        assert_eq!(classify_d1_error("D1 DB is overloaded. Too many requests queued."), Transient);
        assert_eq!(classify_d1_error("D1_ERROR: D1 call timed out (4000 ms)"), Transient);
        assert_eq!(
            classify_d1_error("D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node."),
            Transient
        );
        assert_eq!(classify_d1_error(&injected_message(3, "claim")), Transient);
        assert_eq!(
            classify_d1_error("D1_ERROR: UNIQUE constraint failed: approvals.token_sha256: SQLITE_CONSTRAINT"),
            Permanent
        );
        assert_eq!(classify_d1_error("D1_ERROR: no such table: approvals: SQLITE_ERROR"), Permanent);
        assert_eq!(classify_d1_error("D1_ERROR: near \"SELEC\": syntax error"), Permanent);
        assert_eq!(classify_d1_error("D1_ERROR: something new"), Unknown);
    }

    #[test]
    fn retry_budget_is_well_under_a_second() {
        let worst: u64 = (1..D1_RETRY.max_attempts).map(|a| D1_RETRY.backoff_ms(a, 0.999_999)).sum();
        assert!(worst <= 500, "{worst} ms");
    }
}
