//! The notification sections: the domains ringi may mail besides an approval's own addresses, and the chat
//! channels a registration may name.

use super::vars::{check_url, ConfigError, Vars};
use crate::adapters::chat::ChatChannels;

/// `MAIL_ALLOWED_DOMAINS` (lower case, a leading `@` dropped), so that a registrant cannot make ringi mail
/// anyone.
pub(super) fn mail_allowed_domains(v: &Vars) -> Result<Vec<String>, ConfigError> {
    let domains: Vec<String> =
        v.list("MAIL_ALLOWED_DOMAINS").into_iter().map(|d| d.trim_start_matches('@').to_ascii_lowercase()).collect();
    if let Some(bad) = domains.iter().find(|d| !crate::base::text::valid_domain(d)) {
        return Err(ConfigError::Invalid("MAIL_ALLOWED_DOMAINS", format!("{bad:?} is not a domain name")));
    }
    Ok(domains)
}

/// `CHAT_CHANNELS` (a secret): its errors never repeat a URL.
pub(super) fn chat_channels(v: &Vars) -> Result<ChatChannels, ConfigError> {
    match v.opt("CHAT_CHANNELS") {
        None => Ok(ChatChannels::default()),
        Some(c) => ChatChannels::parse(&c, |u| {
            check_url("CHAT_CHANNELS", u).map_err(|_| "must be an https:// URL (http:// only for loopback)".into())
        })
        .map_err(|e| ConfigError::Invalid("CHAT_CHANNELS", e)),
    }
}
