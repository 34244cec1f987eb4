//! The dev-only test clock (`TEST_CLOCK`): moves the worker's "now" forward so that a test skips a lease, a
//! schedule or an expiry instead of sleeping through it.

use crate::dev::switch::DevSwitch;

/// How far the dev-only test clock may move "now" forward: long enough for the longest retention, short
/// enough that no arithmetic on a moved time can overflow.
const MAX_CLOCK_OFFSET_SECS: i64 = 10 * 366 * 86_400;

/// How far ahead of the host's clock the worker's "now" runs under the test clock: whole seconds, forward
/// only (`90`, or `+90`), so that a test skips a lease, a schedule or an expiry instead of sleeping through it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockOffset(i64);

impl ClockOffset {
    pub fn parse(spec: &str) -> Result<Self, String> {
        let digits = spec.trim().strip_prefix('+').unwrap_or(spec.trim());
        digits
            .parse::<i64>()
            .ok()
            .filter(|s| digits.bytes().all(|b| b.is_ascii_digit()) && *s <= MAX_CLOCK_OFFSET_SECS)
            .map(|s| Self(s * 1000))
            .ok_or_else(|| format!("{spec:?}: whole seconds to move the clock forward, 0-{MAX_CLOCK_OFFSET_SECS}"))
    }

    pub fn ms(self) -> i64 {
        self.0
    }
}

/// `TEST_CLOCK`: off in production; `header` moves "now" per request by `x-ringi-clock` (a cron run: the
/// trigger's `clock=` part); anything else is the [`ClockOffset`] of every request and cron run. Refused off
/// loopback like the other dev switches.
pub type TestClock = DevSwitch<ClockOffset>;

impl TestClock {
    pub fn parse(v: &str) -> Result<Self, String> {
        Self::parse_with(v, ClockOffset::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offsets_move_forward_only() {
        assert_eq!(ClockOffset::parse("90").unwrap().ms(), 90_000);
        assert_eq!(ClockOffset::parse(" +0 ").unwrap().ms(), 0);
        assert_eq!(ClockOffset::parse("316224000").unwrap().ms(), MAX_CLOCK_OFFSET_SECS * 1000);
        for bad in ["", "-5", "1.5", "5s", "+-5", "316224001", "99999999999999999999"] {
            assert!(ClockOffset::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(TestClock::parse("header").unwrap(), TestClock::Header);
        assert_eq!(TestClock::parse("off").unwrap(), TestClock::Off);
        assert_eq!(TestClock::parse("60").unwrap(), TestClock::Always(ClockOffset(60_000)));
        assert!(TestClock::parse("soon").is_err());
        assert_eq!(TestClock::Header.resolve(Some("+12"), ClockOffset::parse), Ok(Some(ClockOffset(12_000))));
    }
}
