//! The time and rate sections: how long a claim, a reminder window, the outcome-on-expiry lead and the
//! retention of approvals and their audit trail last, and how many registrations a credential may make.

use super::vars::{ConfigError, Vars};
use crate::adapters::sfn::RetryPolicy;

/// Time a claim holder needs besides the callback itself (the claim, the final D1 writes).
pub const CLAIM_LEASE_MARGIN_MS: u64 = 2_000;

/// The shortest `CLAIM_LEASE_SECONDS` accepted: a lease must outlast the worst-case delivery of a callback
/// (every attempt timing out plus backoff, [`RetryPolicy::worst_case_ms`]) and the margin, or a second
/// approver could claim and deliver while the first delivery is still in flight.
pub fn min_claim_lease_secs(policy: &RetryPolicy) -> i64 {
    (policy.worst_case_ms() + CLAIM_LEASE_MARGIN_MS).div_ceil(1000) as i64
}

pub(super) struct Lifetimes {
    pub claim_lease_ms: i64,
    pub reminder_window_ms: i64,
    pub on_expiry_lead_ms: i64,
    pub retention_ms: i64,
    pub audit_retention_ms: i64,
}

/// `CLAIM_LEASE_SECONDS` (at least [`min_claim_lease_secs`]; `federated`: plus the credential fetches),
/// `REMINDER_BEFORE_SECONDS`, `ON_EXPIRY_LEAD_SECONDS`, `RETENTION_SECONDS`, `AUDIT_RETENTION_DAYS`.
pub(super) fn lifetimes(v: &Vars, federated: bool) -> Result<Lifetimes, ConfigError> {
    let claim_lease_ms = v.secs("CLAIM_LEASE_SECONDS", 30, 900)?;
    // Under federation a delivery may also fetch credentials: at most twice (cold, and once more when Step
    // Functions calls them expired), each bounded like an attempt.
    let sts_secs = match federated {
        true => 2 * RetryPolicy::default().attempt_timeout_ms.div_ceil(1000) as i64,
        false => 0,
    };
    let min_lease = min_claim_lease_secs(&RetryPolicy::default()) + sts_secs;
    if claim_lease_ms < min_lease * 1000 {
        let policy = RetryPolicy::default();
        return Err(ConfigError::Invalid(
            "CLAIM_LEASE_SECONDS",
            format!(
                "must be at least {min_lease} seconds: a claim must outlast the worst-case callback delivery \
                 ({} attempts × {} ms timeout + backoff = {} ms) plus {CLAIM_LEASE_MARGIN_MS} ms",
                policy.max_attempts,
                policy.attempt_timeout_ms,
                policy.worst_case_ms()
            ),
        ));
    }
    let reminder_window_ms = v.secs("REMINDER_BEFORE_SECONDS", 24 * 3600, 366 * 86_400)?;
    let on_expiry_lead_ms = v.secs("ON_EXPIRY_LEAD_SECONDS", 600, 86_400)?;
    let retention_ms = v.secs("RETENTION_SECONDS", 90 * 86_400, 10 * 366 * 86_400)?;
    let audit_retention_ms = match v.opt("AUDIT_RETENTION_DAYS") {
        None => 400 * 86_400_000,
        Some(d) => d
            .parse::<i64>()
            .ok()
            .filter(|d| (1..=3660).contains(d))
            .map(|d| d * 86_400_000)
            .ok_or_else(|| ConfigError::Invalid("AUDIT_RETENTION_DAYS", "must be 1-3660 days".into()))?,
    };
    Ok(Lifetimes { claim_lease_ms, reminder_window_ms, on_expiry_lead_ms, retention_ms, audit_retention_ms })
}

/// `REGISTER_RATE_PER_MINUTE`: registrations one credential may make per minute (default 600).
pub(super) fn register_rate(v: &Vars) -> Result<u32, ConfigError> {
    match v.opt("REGISTER_RATE_PER_MINUTE") {
        None => Ok(600),
        Some(n) => n
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=100_000).contains(n))
            .ok_or_else(|| ConfigError::Invalid("REGISTER_RATE_PER_MINUTE", "must be 1-100000".into())),
    }
}
