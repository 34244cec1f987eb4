//! The notification sections: the domains ringi may mail besides an approval's own addresses, and the chat
//! channels a registration may name.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};

use super::vars::{check_url, ConfigError, Vars};
use crate::adapters::chat::ChatChannels;
use crate::adapters::keyring::SigningKey;
use crate::adapters::webpush::PushHosts;
use crate::base::text::{is_loopback_origin, valid_domain};

/// Web Push's configuration: the VAPID key (its own secret, not the key ring's: a device's subscription is bound
/// to the key it subscribed with, so rotating the ring must not unsubscribe every phone), the contact a push
/// service may write to, and the push services ringi posts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    pub key: SigningKey,
    /// `VAPID_SUBJECT`: `mailto:` or `https:`; default `mailto:` `MAIL_FROM`, else `PUBLIC_BASE_URL`.
    pub subject: String,
    pub hosts: PushHosts,
}

impl PushConfig {
    /// The `applicationServerKey` (base64url of the uncompressed point).
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.public_point())
    }
}

/// `VAPID_KEY` (a private EC P-256 JWK, a secret), `VAPID_SUBJECT`, `PUSH_ALLOWED_HOSTS` (comma-separated hosts,
/// `*.domain` for subdomains; default the browsers' push services). Loopback push services only when
/// `PUBLIC_BASE_URL` is loopback, like the dev switches.
pub(super) fn push(v: &Vars, public_base_url: &str) -> Result<Option<PushConfig>, ConfigError> {
    let Some(jwk) = v.opt("VAPID_KEY") else { return Ok(None) };
    let key = SigningKey::parse(&jwk).map_err(|e| ConfigError::Invalid("VAPID_KEY", e))?;
    let subject = match v.opt("VAPID_SUBJECT") {
        Some(s) if (s.starts_with("mailto:") && s.len() > 7) || s.starts_with("https://") => s,
        Some(_) => return Err(ConfigError::Invalid("VAPID_SUBJECT", "must be a mailto: or https: URI".into())),
        None => match v.opt("MAIL_FROM") {
            Some(from) => format!("mailto:{from}"),
            None => public_base_url.to_owned(),
        },
    };
    let loopback = is_loopback_origin(public_base_url);
    let listed = v.list("PUSH_ALLOWED_HOSTS");
    let hosts = if listed.is_empty() {
        PushHosts::defaults(loopback)
    } else {
        let hosts: Vec<String> = listed.iter().map(|h| h.to_ascii_lowercase()).collect();
        if let Some(bad) = hosts.iter().find(|h| !valid_domain(h.strip_prefix("*.").unwrap_or(h))) {
            return Err(ConfigError::Invalid("PUSH_ALLOWED_HOSTS", format!("{bad:?} is not a host name")));
        }
        PushHosts { hosts, loopback }
    };
    Ok(Some(PushConfig { key, subject, hosts }))
}

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
