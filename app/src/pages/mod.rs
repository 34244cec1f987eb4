//! The screens of the main area, one room each.

pub mod approval;
pub mod audit;
pub mod inbox;
pub mod not_found;
pub mod settings;
pub mod sign_in;
