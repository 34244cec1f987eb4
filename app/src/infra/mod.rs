//! Everything that talks to the browser or the worker: the API client, sign-in, web storage, the runtime
//! configuration and dates. No views.

pub mod api;
pub mod auth;
pub mod config;
pub mod push;
pub mod storage;
pub mod time;
