//! ringi-core: the platform-free domain and wire types of ringi, shared by the edge worker (wasm32 in
//! workerd), the SPA (wasm32 in the browser) and native tests. No I/O and no clock: callers pass `now`.
//!
//! The modules sit in layers; a module uses its own folder and the ones below it, never one above
//! (`scripts/lint/check_layers.py`, run by `make lint`, keeps it so and finds import cycles):
//!
//! 1. [`base`]: value types (ids, principals, times, locales), text rules, the one error enum;
//! 2. [`dev`]: dev/bench-only switches (fault injection, latency, the test clock);
//! 3. [`domain`]: the approval's rules (lifecycle, quorum, votes, delegation, schedule, form, …);
//! 4. [`adapters`]: the platform-free halves of the worker's adapters, and [`sql`]: its D1 statements;
//! 5. [`api`]: the route table, wire types and request bodies;
//! 6. [`config`]: the worker's typed configuration, read once.

pub mod adapters;
pub mod api;
pub mod base;
pub mod config;
pub mod dev;
pub mod domain;
pub mod sql;

pub use base::error::{ApiError, ErrorBody};
pub use base::ids::{ApprovalId, TaskToken};
