//! ringi-core: the platform-free domain and wire types of ringi, shared by the edge worker (wasm32 in
//! workerd), the SPA (wasm32 in the browser) and native tests. No I/O and no clock: callers pass `now`.

pub mod approval;
pub mod assets;
pub mod audit;
pub mod audit_export;
pub mod aws_target;
mod body;
pub mod chat;
pub mod config;
pub mod context;
pub mod decision;
pub mod delegation;
pub mod devswitch;
pub mod discovery;
pub mod dynamo;
pub mod error;
pub mod federation;
pub mod form;
pub mod guard_ddb;
pub mod ids;
pub mod inbox;
pub mod jwt;
pub mod latency;
pub mod locale;
pub mod mail;
pub mod on_expiry;
pub mod principal;
pub mod quorum;
pub mod rate;
pub mod register;
pub mod route;
pub mod rules;
pub mod schedule;
pub mod schedule_ddb;
pub mod self_approval;
pub mod sfn;
pub mod sigv4;
pub mod sql;
pub mod storage;
pub mod time;
pub mod vote;
pub mod wire;

pub use error::{ApiError, ErrorBody};
pub use ids::{ApprovalId, TaskToken};

/// Lower-case hex SHA-256 (API key digests, token fingerprints).
pub fn hex_sha256(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(data))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two byte strings in time independent of where they differ (API key digests).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
