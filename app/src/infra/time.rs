//! Dates for people: relative ("in 45 min", "あと45分") and absolute (the browser's Intl, local time zone).

use ringi_core::base::locale::Locale;

const MINUTE: f64 = 60_000.0;
const HOUR: f64 = 60.0 * MINUTE;
const DAY: f64 = 24.0 * HOUR;

/// Epoch milliseconds of an RFC 3339 timestamp, as the API sends them.
pub fn parse(rfc3339: &str) -> Option<f64> {
    let ms = js_sys::Date::parse(rfc3339);
    (!ms.is_nan()).then_some(ms)
}

pub fn now() -> f64 {
    js_sys::Date::now()
}

/// How soon a pending approval runs out, for styling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// Already past.
    Over,
    /// Less than an hour left.
    Urgent,
    /// Less than a day left.
    Soon,
    Later,
}

impl Urgency {
    pub fn of(expires_at_ms: f64, now_ms: f64) -> Self {
        let left = expires_at_ms - now_ms;
        if left <= 0.0 {
            Urgency::Over
        } else if left < HOUR {
            Urgency::Urgent
        } else if left < DAY {
            Urgency::Soon
        } else {
            Urgency::Later
        }
    }

    pub fn class(self) -> &'static str {
        match self {
            Urgency::Over => "urgency urgency--over",
            Urgency::Urgent => "urgency urgency--urgent",
            Urgency::Soon => "urgency urgency--soon",
            Urgency::Later => "urgency",
        }
    }
}

/// "in 45 min" / "3 h ago" / "あと45分" / "3時間前".
pub fn relative(target_ms: f64, now_ms: f64, locale: Locale) -> String {
    let delta = target_ms - now_ms;
    let future = delta >= 0.0;
    let abs = delta.abs();
    let (n, unit) = if abs < MINUTE {
        (0, Unit::Now)
    } else if abs < HOUR {
        ((abs / MINUTE).floor() as u64, Unit::Minute)
    } else if abs < DAY {
        ((abs / HOUR).floor() as u64, Unit::Hour)
    } else {
        ((abs / DAY).floor() as u64, Unit::Day)
    };
    match locale {
        Locale::En => {
            let amount = match unit {
                Unit::Now => return if future { "in less than a minute".into() } else { "just now".into() },
                Unit::Minute => format!("{n} min"),
                Unit::Hour => format!("{n} h"),
                Unit::Day if n == 1 => "1 day".into(),
                Unit::Day => format!("{n} days"),
            };
            if future {
                format!("in {amount}")
            } else {
                format!("{amount} ago")
            }
        }
        Locale::Ja => {
            let amount = match unit {
                Unit::Now => return if future { "まもなく".into() } else { "たった今".into() },
                Unit::Minute => format!("{n}分"),
                Unit::Hour => format!("{n}時間"),
                Unit::Day => format!("{n}日"),
            };
            if future {
                format!("あと{amount}")
            } else {
                format!("{amount}前")
            }
        }
    }
}

enum Unit {
    Now,
    Minute,
    Hour,
    Day,
}

/// Date and time in the browser's time zone, e.g. "Dec 1, 2026, 9:00 AM" / "2026/12/01 9:00".
pub fn absolute(ms: f64, locale: Locale) -> String {
    let date = js_sys::Date::new(&ms.into());
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"dateStyle".into(), &"medium".into());
    let _ = js_sys::Reflect::set(&options, &"timeStyle".into(), &"short".into());
    date.to_locale_string(locale.as_str(), &options).into()
}

/// Absolute form of an API timestamp, or the raw text when it does not parse.
pub fn absolute_str(rfc3339: &str, locale: Locale) -> String {
    parse(rfc3339).map_or_else(|| rfc3339.to_owned(), |ms| absolute(ms, locale))
}

/// A `<input type=date>` value (`YYYY-MM-DD`) at `hh:mm:ss` in the browser's time zone, as RFC 3339 UTC;
/// `None` when it is not a date.
#[cfg(feature = "admin")]
pub fn local_date_to_rfc3339(date: &str, hh_mm_ss: &str) -> Option<String> {
    let d = js_sys::Date::new(&format!("{date}T{hh_mm_ss}").into());
    (!d.get_time().is_nan()).then(|| d.to_iso_string().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_texts() {
        let now = 1_000_000_000_000.0;
        assert_eq!(relative(now + 45.0 * MINUTE + 5.0, now, Locale::En), "in 45 min");
        assert_eq!(relative(now - 3.0 * HOUR, now, Locale::En), "3 h ago");
        assert_eq!(relative(now + 2.5 * DAY, now, Locale::En), "in 2 days");
        assert_eq!(relative(now + 45.0 * MINUTE, now, Locale::Ja), "あと45分");
        assert_eq!(relative(now - DAY, now, Locale::Ja), "1日前");
        assert_eq!(Urgency::of(now + 10.0 * MINUTE, now), Urgency::Urgent);
        assert_eq!(Urgency::of(now + 2.0 * HOUR, now), Urgency::Soon);
        assert_eq!(Urgency::of(now - 1.0, now), Urgency::Over);
    }
}
