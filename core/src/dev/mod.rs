//! Dev/bench-only switches (`D1_FAULTS`, `INJECT_LATENCY`, `TEST_CLOCK`, `DEV_RELOAD`): refused by the configuration unless
//! `PUBLIC_BASE_URL` is a loopback origin.

pub mod clock;
pub mod faults;
pub mod latency;
pub mod reload;
pub mod switch;
