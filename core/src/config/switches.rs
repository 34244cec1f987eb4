//! The dev/bench switches' section: `D1_FAULTS`, `INJECT_LATENCY`, `TEST_CLOCK`, `DEV_RELOAD`, each refused unless
//! `PUBLIC_BASE_URL` is a loopback origin, so that a production configuration cannot carry one.

use super::vars::{ConfigError, Vars};
use crate::base::text::is_loopback_origin;
use crate::dev::clock::TestClock;
use crate::dev::faults::D1Faults;
use crate::dev::latency::LatencyModel;
use crate::dev::reload::DevReload;

pub(super) struct Switches {
    pub d1_faults: D1Faults,
    pub inject_latency: LatencyModel,
    pub test_clock: TestClock,
    pub dev_reload: DevReload,
}

pub(super) fn switches(v: &Vars, public_base_url: &str) -> Result<Switches, ConfigError> {
    let d1_faults = match v.opt("D1_FAULTS") {
        None => D1Faults::Off,
        Some(s) => D1Faults::parse(&s).map_err(|e| ConfigError::Invalid("D1_FAULTS", e))?,
    };
    let inject_latency = match v.opt("INJECT_LATENCY") {
        None => LatencyModel::Off,
        Some(s) => LatencyModel::parse(&s).map_err(|e| ConfigError::Invalid("INJECT_LATENCY", e))?,
    };
    let test_clock = match v.opt("TEST_CLOCK") {
        None => TestClock::Off,
        Some(s) => TestClock::parse(&s).map_err(|e| ConfigError::Invalid("TEST_CLOCK", e))?,
    };
    let dev_reload = match v.opt("DEV_RELOAD") {
        None => DevReload::Off,
        Some(s) => DevReload::parse(&s).map_err(|e| ConfigError::Invalid("DEV_RELOAD", e))?,
    };
    for (name, on) in [
        ("D1_FAULTS", d1_faults.enabled()),
        ("INJECT_LATENCY", inject_latency.enabled()),
        ("TEST_CLOCK", test_clock.enabled()),
        ("DEV_RELOAD", dev_reload.enabled()),
    ] {
        if on && !is_loopback_origin(public_base_url) {
            return Err(ConfigError::Invalid(
                name,
                "this switch is for local development and benchmarks only: it is refused unless \
                 PUBLIC_BASE_URL is a loopback origin (127.0.0.1, localhost, [::1])"
                    .into(),
            ));
        }
    }
    Ok(Switches { d1_faults, inject_latency, test_clock, dev_reload })
}
