//! ringi's D1 (SQLite) statements — their SQL text and the order of their bound values — built by
//! platform-free code so that native tests run them against SQLite with the worker's real migrations
//! (`core/tests/sql_*.rs`), one module per concern: the claim and the writes that close or reopen a decision
//! ([`decision`]), votes and the quorum ([`votes`]), the guards a change commits under ([`guards`]),
//! out-of-office routing at registration ([`routing`]), the rate window ([`registration`]), the inbox page
//! ([`inbox`]), the schedule's take, lease and done ([`schedule`]), the outcome on expiry ([`on_expiry`]) and
//! the cron's sweeps ([`upkeep`]), and sealing events into their
//! approval's hash chain ([`chain`]). The worker only binds the values and runs them in its batches.

pub mod chain;
pub mod decision;
pub mod guards;
pub mod inbox;
pub mod on_expiry;
pub mod push;
pub mod registration;
pub mod routing;
pub mod schedule;
pub mod upkeep;
pub mod votes;

pub use guards::guards_sql;

/// A value bound to a statement parameter (the worker binds these as JS values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlArg {
    Text(String),
    Int(i64),
    Null,
}

impl SqlArg {
    /// Text, or NULL.
    pub fn opt(v: Option<&str>) -> Self {
        v.map_or(Self::Null, Self::from)
    }
}

impl From<&str> for SqlArg {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

/// A SQL condition or statement and the values of its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlCond {
    pub sql: String,
    pub args: Vec<SqlArg>,
}

/// Every event insert: `dedupe_key` is unique, so a statement run again (a retried batch) records nothing twice.
pub const EVENT_INSERT: &str =
    "INSERT OR IGNORE INTO approval_events (approval_id, at, kind, actor, actor_display, detail_json, dedupe_key)";
