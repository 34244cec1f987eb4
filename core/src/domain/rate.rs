//! The registration rate: each credential's registrations are counted per minute (`RATE_LIMIT_PER_MINUTE`);
//! both backends keep one counter per credential and window and answer a full one with 429 and Retry-After.

use crate::base::error::retry_secs;

/// The length of one counting window.
pub const WINDOW_MS: i64 = 60_000;

/// The window a registration at `now` counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateWindow {
    /// Unix ms, a multiple of [`WINDOW_MS`].
    pub start: i64,
    /// Whole seconds until the next window opens (at least 1): the 429's Retry-After.
    pub retry_after_secs: u32,
}

impl RateWindow {
    pub fn at(now: i64) -> Self {
        let start = now - now.rem_euclid(WINDOW_MS);
        Self { start, retry_after_secs: retry_secs(start + WINDOW_MS, now) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_the_minute_and_retry_after_reaches_its_end() {
        let w = RateWindow::at(1_800_000_020_000);
        assert_eq!((w.start, w.retry_after_secs), (1_800_000_000_000, 40));
        assert_eq!(RateWindow::at(120_000).retry_after_secs, 60);
        // The last millisecond of a window still waits a whole second, never zero.
        assert_eq!(RateWindow::at(179_999), RateWindow { start: 120_000, retry_after_secs: 1 });
        assert_eq!(RateWindow::at(178_500).retry_after_secs, 2);
    }
}
