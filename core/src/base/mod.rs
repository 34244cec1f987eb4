//! The bottom layer: value types that cross every boundary (ids, principals, times, locales), the text
//! rules they share, and the one error enum every layer returns (mapped to HTTP in [`error`]).

pub mod body;
pub mod by_name;
pub mod context;
pub mod corrupt;
pub mod error;
pub mod hex;
pub mod ids;
pub mod json;
pub mod locale;
pub mod principal;
pub mod sign_in;
pub mod status;
pub mod text;
pub mod time;
