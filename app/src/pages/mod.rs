//! The screens of the main area, one room each.

pub mod approval;
#[cfg(feature = "admin")]
pub mod audit;
pub mod config_missing;
pub mod inbox;
pub mod not_found;
#[cfg(feature = "admin")]
pub mod settings;
pub mod sign_in;
