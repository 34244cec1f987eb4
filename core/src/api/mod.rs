//! The HTTP API's shapes: the route table, the wire types the SPA and the worker share, and the request
//! bodies (registration, decision) parsed into the domain's values.

pub mod audit_export;
pub mod decision;
pub mod deferred;
pub mod receipt;
pub mod register;
pub mod route;
pub mod wire;
