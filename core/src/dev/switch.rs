//! The dev/bench-only switches (`D1_FAULTS`, `INJECT_LATENCY`): off, per request, or one setting for all.
//! `Config::from_lookup` refuses any of them unless `PUBLIC_BASE_URL` is a loopback origin.

/// A switch's value: `off` (production), `header` (each request brings its setting: a header, or a part of
/// the cron string), or one setting for every request and cron run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DevSwitch<T> {
    #[default]
    Off,
    Header,
    Always(T),
}

impl<T: Clone> DevSwitch<T> {
    /// `""`/`off`, `header`, or a setting that `setting` parses.
    pub fn parse_with(v: &str, setting: impl Fn(&str) -> Result<T, String>) -> Result<Self, String> {
        match v.trim() {
            "" | "off" => Ok(Self::Off),
            "header" => Ok(Self::Header),
            spec => setting(spec).map(Self::Always),
        }
    }

    pub fn enabled(&self) -> bool {
        !matches!(self, Self::Off)
    }

    /// The setting one request runs with: `given` is what the request brought (with `header`), parsed by
    /// `setting`; `None`: none.
    pub fn resolve(
        &self,
        given: Option<&str>,
        setting: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        match self {
            Self::Off => Ok(None),
            Self::Always(t) => Ok(Some(t.clone())),
            Self::Header => given.map(setting).transpose(),
        }
    }
}

/// The part of a cron string after `key=` up to the next space: a setting of a `header` switch for a cron run
/// (`*/5 * * * * d1-fault=call=3 latency=d1=80`).
pub fn cron_part<'a>(cron: &'a str, key: &str) -> Option<&'a str> {
    cron.split_whitespace().find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Result<u32, String> {
        s.parse().map_err(|_| format!("{s:?}"))
    }

    #[test]
    fn switches() {
        assert_eq!(DevSwitch::parse_with("off", num), Ok(DevSwitch::Off));
        assert_eq!(DevSwitch::parse_with(" header ", num), Ok(DevSwitch::Header));
        assert_eq!(DevSwitch::parse_with("7", num), Ok(DevSwitch::Always(7)));
        assert!(DevSwitch::parse_with("x", num).is_err());
        assert_eq!(DevSwitch::Off.resolve(Some("3"), num), Ok(None));
        assert_eq!(DevSwitch::Always(7).resolve(Some("3"), num), Ok(Some(7)));
        assert_eq!(DevSwitch::Header.resolve(Some("3"), num), Ok(Some(3)));
        assert_eq!(DevSwitch::Header.resolve(None, num), Ok(None));
        assert!(DevSwitch::Header.resolve(Some("x"), num).is_err());
    }

    #[test]
    fn cron_parts() {
        let cron = "*/5 * * * * d1-fault=call=3,after latency=d1=80,aws=80";
        assert_eq!(cron_part(cron, "d1-fault"), Some("call=3,after"));
        assert_eq!(cron_part(cron, "latency"), Some("d1=80,aws=80"));
        assert_eq!(cron_part("*/5 * * * *", "latency"), None);
    }
}
