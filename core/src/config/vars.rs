//! Reading one variable: trimmed (an empty string is unset), required or optional, as seconds or as a URL;
//! and the one error every section reports.

use crate::base::text;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration {0} is required")]
    Missing(&'static str),
    #[error("configuration {0} is invalid: {1}")]
    Invalid(&'static str, String),
}

/// The variables as the worker hands them over (wrangler vars and secrets).
pub(super) struct Vars<'a>(pub &'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    pub fn opt(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    pub fn req(&self, name: &'static str) -> Result<String, ConfigError> {
        self.opt(name).ok_or(ConfigError::Missing(name))
    }

    /// An optional URL (see [`check_url`]), without its trailing `/`.
    pub fn url(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        self.opt(name).map(|u| url(name, u)).transpose()
    }

    /// Seconds in `1..=max` (default `default`), as milliseconds.
    pub fn secs(&self, name: &'static str, default: i64, max: i64) -> Result<i64, ConfigError> {
        match self.opt(name) {
            None => Ok(default * 1000),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|s| (1..=max).contains(s))
                .map(|s| s * 1000)
                .ok_or_else(|| ConfigError::Invalid(name, format!("must be 1-{max} seconds"))),
        }
    }

    /// A comma-separated list (blank entries dropped).
    pub fn list(&self, name: &str) -> Vec<String> {
        self.opt(name)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// [`text::check_url`] for the variable `name`.
pub fn check_url(name: &'static str, v: &str) -> Result<(), ConfigError> {
    text::check_url(v).map_err(|m| ConfigError::Invalid(name, m))
}

pub(super) fn url(name: &'static str, v: String) -> Result<String, ConfigError> {
    check_url(name, &v)?;
    Ok(v.trim_end_matches('/').to_owned())
}
