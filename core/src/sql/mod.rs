//! ringi's D1 (SQLite) statements that carry a rule, built by platform-free code so that native tests run them
//! against SQLite with the worker's real migrations (`core/tests/sql_*.rs`): the guards a change commits under
//! ([`guards`]) and out-of-office routing at registration ([`routing`]). The worker binds the values and runs
//! them in its batches.

pub mod guards;
pub mod routing;

pub use guards::guards_sql;

/// A value bound to a statement parameter (the worker binds these as JS values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlArg {
    Text(String),
    Int(i64),
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
