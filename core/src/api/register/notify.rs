//! A registration's `notify`: whom ringi tells of the new approval (emails, under the recipient rule, and
//! configured chat channels by name).

use serde_json::Value;

use crate::adapters::chat::{ChannelName, ChatChannels, MAX_CHANNELS};
use crate::base::error::ApiError;
use crate::base::principal::{Principal, MAX_APPROVERS};
use crate::base::text::valid_email;

/// One `notify` entry: an email (a string, the original form, or `{"email": …}`) or a chat channel.
enum NotifyEntry<'a> {
    Email { at: String, email: &'a str },
    Channel { at: String, name: &'a str },
}

fn notify_entry(i: usize, v: &Value) -> Result<NotifyEntry<'_>, ApiError> {
    let at = format!("notify[{i}]");
    match v {
        Value::String(email) => Ok(NotifyEntry::Email { at, email }),
        Value::Object(o) => match o.iter().next().filter(|_| o.len() == 1).map(|(k, v)| (k.as_str(), v.as_str())) {
            Some(("email", Some(email))) => Ok(NotifyEntry::Email { at: format!("{at}.email"), email }),
            Some(("channel", Some(name))) => Ok(NotifyEntry::Channel { at: format!("{at}.channel"), name }),
            _ => Err(ApiError::invalid(at, "must be an email address, {\"email\": …} or {\"channel\": …}")),
        },
        _ => Err(ApiError::invalid(at, "is not an email address")),
    }
}

/// `notify` as given (approvers' emails or allowed domains only, and configured chat channels), else the
/// email approvers and no channel. A `notify` lists everyone told: one that names only channels mails nobody.
pub(super) fn notify(
    raw: Option<Vec<Value>>,
    approvers: &[Principal],
    allowed_domains: &[String],
    chat: &ChatChannels,
) -> Result<(Vec<String>, Vec<ChannelName>), ApiError> {
    let Some(raw) = raw else {
        return Ok((
            approvers
                .iter()
                .filter_map(|p| match p {
                    Principal::Email(e) => Some(e.clone()),
                    _ => None,
                })
                .collect(),
            Vec::new(),
        ));
    };
    let too_many = || {
        ApiError::invalid(
            "notify",
            format!("must be an array of at most {MAX_APPROVERS} emails and {MAX_CHANNELS} {{\"channel\": …}} entries"),
        )
    };
    if raw.len() > MAX_APPROVERS + MAX_CHANNELS {
        return Err(too_many());
    }
    let mut out = Vec::new();
    let mut channels: Vec<ChannelName> = Vec::new();
    // Every entry's shape first (as serde would), then the rules.
    let entries = raw.iter().enumerate().map(|(i, v)| notify_entry(i, v)).collect::<Result<Vec<_>, _>>()?;
    for entry in entries {
        let (at, e) = match entry {
            NotifyEntry::Email { at, email } => (at, email),
            NotifyEntry::Channel { at, name } => {
                // Only a configured name: a registrant never gives ringi a URL to post to.
                let name = chat
                    .find(name.trim())
                    .ok_or_else(|| ApiError::invalid(at, "is not a chat channel of this ringi (CHAT_CHANNELS)"))?;
                if !channels.contains(&name) {
                    channels.push(name);
                }
                continue;
            }
        };
        let e = e.trim().to_ascii_lowercase();
        if !valid_email(&e) {
            return Err(ApiError::invalid(at, "is not an email address"));
        }
        crate::domain::recipients::check_address(&at, &e, approvers, allowed_domains)?;
        if !out.contains(&e) {
            out.push(e);
        }
    }
    if out.len() > MAX_APPROVERS || channels.len() > MAX_CHANNELS {
        return Err(too_many());
    }
    Ok((out, channels))
}
