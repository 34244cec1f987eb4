//! Chat notifications: a registration's `notify` may name channels (`{"channel": "deploys"}`) that the
//! operator configured server-side (`CHAT_CHANNELS`: name → Slack / Microsoft Teams incoming webhook, or a
//! generic signed webhook). Registrants name a channel, never a URL, so a registration cannot make ringi post
//! anywhere else. The message carries what the mail carries — title, registered by, requested by, expiry and
//! the short link `https://HOST/a/{id}` — and no decision buttons: the decision stays behind sign-in.
//!
//! Webhook URLs and signing secrets are secrets: [`Channel`]'s `Debug` hides them, and no error names them.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::base::time::format_rfc3339;

/// Channels one registration may name at most.
pub const MAX_CHANNELS: usize = 10;
/// The header of a generic webhook's signature.
pub const SIGNATURE_HEADER: &str = "Ringi-Signature";
/// Shortest signing secret accepted (bytes).
pub const MIN_SECRET_BYTES: usize = 16;

/// A configured channel's name: 1-64 of `a-z 0-9 - _ .`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ChannelName(String);

impl ChannelName {
    pub fn parse(s: &str) -> Option<Self> {
        let ok = (1..=64).contains(&s.len())
            && s.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
        ok.then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a channel's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// A Slack incoming webhook: Block Kit.
    Slack,
    /// A Microsoft Teams incoming webhook (a Workflows "post to a channel when a webhook request is received"
    /// flow, or a legacy connector): an Adaptive Card.
    Teams,
    /// Any HTTPS endpoint: ringi's own JSON, signed with HMAC-SHA256 ([`signature_header`]).
    Webhook,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Teams => "teams",
            Self::Webhook => "webhook",
        }
    }
}

/// One configured channel. The URL and the secret never show in `Debug`, logs, errors or responses.
#[derive(Clone, PartialEq, Eq)]
pub struct Channel {
    pub kind: ChannelKind,
    pub url: String,
    /// The signing secret of a `webhook` channel (required there, refused elsewhere).
    pub secret: Option<String>,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// `CHAT_CHANNELS`, parsed: name → channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatChannels(BTreeMap<ChannelName, Channel>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelDto {
    kind: ChannelKind,
    url: String,
    secret: Option<String>,
}

impl ChatChannels {
    /// Reads the `CHAT_CHANNELS` JSON. `check_url` accepts or refuses a URL (the config's https rule); its
    /// message must not repeat the URL. Errors name the channel, never its URL or secret.
    pub fn parse(json: &str, check_url: impl Fn(&str) -> Result<(), String>) -> Result<Self, String> {
        let raw: BTreeMap<String, Value> = serde_json::from_str(json).map_err(|_| {
            "must be a JSON object: {\"name\": {\"kind\": \"slack\", \"url\": \"https://…\"}}".to_owned()
        })?;
        let mut out = BTreeMap::new();
        for (name, v) in raw {
            let Some(key) = ChannelName::parse(&name) else {
                return Err(format!(
                    "channel name {:?} must be 1-64 of a-z, 0-9, '-', '_', '.' (starting with a letter or digit)",
                    name.chars().take(64).collect::<String>()
                ));
            };
            let shown = format!("{:?}", key.as_str());
            // serde's own message could quote the value (a URL): only say which member is wrong.
            let dto: ChannelDto = serde_json::from_value(v).map_err(|_| {
                format!(
                    "channel {shown} must be {{\"kind\": \"slack\"|\"teams\"|\"webhook\", \"url\": \"https://…\", \
                     \"secret\": \"…\" (webhook only)}}"
                )
            })?;
            check_url(dto.url.trim()).map_err(|m| format!("channel {shown}: url {m}"))?;
            let secret = dto.secret.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
            match (dto.kind, &secret) {
                (ChannelKind::Webhook, None) => {
                    return Err(format!("channel {shown}: a webhook channel needs a signing secret"))
                }
                (ChannelKind::Webhook, Some(s)) if s.len() < MIN_SECRET_BYTES => {
                    return Err(format!("channel {shown}: the secret must be at least {MIN_SECRET_BYTES} bytes"))
                }
                (ChannelKind::Slack | ChannelKind::Teams, Some(_)) => {
                    return Err(format!(
                        "channel {shown}: only webhook channels are signed; a {} channel takes no secret",
                        dto.kind.as_str()
                    ))
                }
                _ => {}
            }
            out.insert(key, Channel { kind: dto.kind, url: dto.url.trim().to_owned(), secret });
        }
        Ok(Self(out))
    }

    pub fn get(&self, name: &ChannelName) -> Option<&Channel> {
        self.0.get(name)
    }

    /// Is `name` configured? (The registration's check.)
    pub fn find(&self, name: &str) -> Option<ChannelName> {
        ChannelName::parse(name).filter(|n| self.0.contains_key(n))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every configured URL and secret (for the callers that scrub them out of text).
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.0.values().flat_map(|c| std::iter::once(c.url.as_str()).chain(c.secret.as_deref()))
    }
}

/// `text` (an error message from the platform, which may quote the URL it failed on) with every configured
/// URL and secret replaced, so that it can be logged.
pub fn scrub(text: &str, channels: &ChatChannels) -> String {
    let mut out = text.to_owned();
    for secret in channels.secrets() {
        out = out.replace(secret, "<redacted>");
    }
    out
}

/// What a chat message says (all of it already public to the approval's approvers).
#[derive(Debug, Clone)]
pub struct ChatInput<'a> {
    pub approval_id: &'a str,
    pub title: &'a str,
    pub url: &'a str,
    pub registered_by: Option<&'a str>,
    pub requested_by: Option<&'a str>,
    pub expires_at_ms: i64,
}

const LEAD: &str = "Approval requested";
const OPEN: &str = "Open the request";
const FOOTER: &str = "Sign in on the page to approve or reject; this message decides nothing.";

fn facts<'a>(m: &ChatInput<'a>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(r) = m.requested_by {
        out.push(("Requested by", r.to_owned()));
    }
    if let Some(r) = m.registered_by {
        out.push(("Registered by", r.to_owned()));
    }
    out.push(("Decide before", format_rfc3339(m.expires_at_ms)));
    out
}

/// The Slack incoming-webhook body: Block Kit (`header`, `section` with plain-text `fields`, a link `button`,
/// `context`) and the notification's fallback `text`. Every registrant text is `plain_text`, so a title
/// cannot carry mentions or links; the one button only opens the approval page. The fallback `text` (what
/// notifications and some clients show) is always mrkdwn, and escaping cannot neutralise all of it (`*`, `_`,
/// `~`, bare URLs): it carries no registrant text, only ringi's own words and the approval's ID and link.
pub fn slack_payload(m: &ChatInput<'_>) -> Value {
    let title: String = m.title.chars().take(150).collect();
    let fields: Vec<Value> = facts(m)
        .into_iter()
        .map(|(k, v)| json!({"type": "plain_text", "text": format!("{k}: {v}"), "emoji": false}))
        .collect();
    json!({
        "text": format!("{LEAD}: `{}` <{}|{OPEN}>", m.approval_id, m.url),
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": title, "emoji": false}},
            {"type": "section", "fields": fields},
            {"type": "actions", "elements": [{
                "type": "button", "text": {"type": "plain_text", "text": OPEN}, "url": m.url,
                "action_id": "open_approval"
            }]},
            {"type": "context", "elements": [{"type": "plain_text", "text": FOOTER, "emoji": false}]}
        ]
    })
}

/// Teams renders a subset of Markdown in card text: registrant texts are escaped so they stay text.
fn teams_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\`*_[]<>~#".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The Teams incoming-webhook body: a `message` with one Adaptive Card (1.4) attachment — the title, a
/// `FactSet`, and an `Action.OpenUrl` to the approval page (no decision actions).
pub fn teams_payload(m: &ChatInput<'_>) -> Value {
    // Every fact value is escaped: the requester is the registrant's text, and the others need no markup.
    let facts: Vec<Value> = facts(m).into_iter().map(|(k, v)| json!({"title": k, "value": teams_escape(&v)})).collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "text": LEAD, "weight": "Bolder", "size": "Small", "isSubtle": true},
                    {"type": "TextBlock", "text": teams_escape(m.title), "weight": "Bolder", "size": "Medium",
                     "wrap": true},
                    {"type": "FactSet", "facts": facts},
                    {"type": "TextBlock", "text": FOOTER, "isSubtle": true, "wrap": true, "size": "Small"}
                ],
                "actions": [{"type": "Action.OpenUrl", "title": OPEN, "url": m.url}]
            }
        }]
    })
}

/// The generic webhook body (its own documented shape, docs/design.md §9).
pub fn webhook_payload(m: &ChatInput<'_>, channel: &ChannelName, sent_at_ms: i64) -> Value {
    json!({
        "type": "approval.requested",
        "channel": channel.as_str(),
        "sentAt": format_rfc3339(sent_at_ms),
        "approval": {
            "id": m.approval_id,
            "title": m.title,
            "url": m.url,
            "registeredBy": m.registered_by,
            "requestedBy": m.requested_by,
            "expiresAt": format_rfc3339(m.expires_at_ms),
        }
    })
}

/// The body a channel of `kind` gets.
pub fn payload(kind: ChannelKind, m: &ChatInput<'_>, channel: &ChannelName, now_ms: i64) -> Value {
    match kind {
        ChannelKind::Slack => slack_payload(m),
        ChannelKind::Teams => teams_payload(m),
        ChannelKind::Webhook => webhook_payload(m, channel, now_ms),
    }
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

/// `Ringi-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A receiver recomputes v1
/// over the raw body it got, compares in constant time, and refuses a `t` too far from its clock (replays).
pub fn signature_header(secret: &str, unix_secs: i64, body: &str) -> String {
    let mac = hmac_sha256(secret.as_bytes(), format!("{unix_secs}.{body}").as_bytes());
    format!("t={unix_secs},v1={}", crate::base::hex::hex(&mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn https(u: &str) -> Result<(), String> {
        if u.starts_with("https://") {
            Ok(())
        } else {
            Err("must be an https:// URL".into())
        }
    }

    fn input() -> ChatInput<'static> {
        ChatInput {
            approval_id: "AbCdEfGhIjKlMnOpQrStUv",
            title: "Deploy <!channel> *v2* [x](https://evil.example)",
            url: "https://ringi.example.com/a/AbCdEfGhIjKlMnOpQrStUv",
            registered_by: Some("api-key:ab12cd34"),
            requested_by: Some("ci@example.com"),
            expires_at_ms: 1_800_000_000_000,
        }
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231 test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(crate::base::hex::hex(&mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First");
        assert_eq!(crate::base::hex::hex(&mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    }

    #[test]
    fn webhook_signature_is_over_timestamp_dot_body() {
        // Computed independently: python3 -c 'import hmac,hashlib;
        //   print(hmac.new(b"whsec_0123456789abcdef", b"1800000000.{\"a\":1}", hashlib.sha256).hexdigest())'
        assert_eq!(
            signature_header("whsec_0123456789abcdef", 1_800_000_000, "{\"a\":1}"),
            "t=1800000000,v1=0cce34cc4ceb50514f7750d02eb315ceeef28c45ee42851f4611ac00df3d49fe"
        );
    }

    #[test]
    fn slack_message_is_block_kit_with_plain_text_and_a_link_button_only() {
        let p = slack_payload(&input());
        let blocks = p["blocks"].as_array().unwrap();
        let types: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["header", "section", "actions", "context"]);
        assert_eq!(blocks[0]["text"]["type"], "plain_text");
        assert_eq!(blocks[0]["text"]["text"], input().title);
        for f in blocks[1]["fields"].as_array().unwrap() {
            assert_eq!(f["type"], "plain_text", "registrant texts are never mrkdwn");
        }
        let fields = blocks[1]["fields"].to_string();
        assert!(fields.contains("Requested by: ci@example.com") && fields.contains("Registered by: api-key:ab12cd34"));
        assert!(fields.contains("Decide before: 2027-01-15T08:00:00.000Z"), "{fields}");
        let buttons = blocks[2]["elements"].as_array().unwrap();
        assert_eq!(buttons.len(), 1);
        assert_eq!(buttons[0]["type"], "button");
        assert_eq!(buttons[0]["url"], input().url);
        assert!(buttons[0].get("value").is_none(), "a link, not an interactive decision");
        // The fallback text (mrkdwn) is ringi's fixed words, the ID and the link: no registrant text at all.
        assert_eq!(
            p["text"],
            format!("Approval requested: `AbCdEfGhIjKlMnOpQrStUv` <{}|Open the request>", input().url)
        );
        for registrant in ["Deploy", "channel", "*v2*", "evil", "ci@example.com"] {
            assert!(!p["text"].as_str().unwrap().contains(registrant), "{registrant}");
        }
    }

    #[test]
    fn teams_message_is_one_adaptive_card_that_opens_the_page() {
        let p = teams_payload(&input());
        assert_eq!(p["type"], "message");
        let a = &p["attachments"][0];
        assert_eq!(a["contentType"], "application/vnd.microsoft.card.adaptive");
        let card = &a["content"];
        assert_eq!((card["type"].as_str(), card["version"].as_str()), (Some("AdaptiveCard"), Some("1.4")));
        assert_eq!(card["$schema"], "http://adaptivecards.io/schemas/adaptive-card.json");
        assert_eq!(card["body"][1]["text"], r"Deploy \<!channel\> \*v2\* \[x\](https://evil.example)");
        let facts = card["body"][2]["facts"].as_array().unwrap();
        assert_eq!(facts[0]["title"], "Requested by");
        let actions = card["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 1);
        assert_eq!(
            (actions[0]["type"].as_str(), actions[0]["url"].as_str()),
            (Some("Action.OpenUrl"), Some(input().url))
        );
    }

    #[test]
    fn webhook_body_names_the_approval_and_no_token() {
        let name = ChannelName::parse("audit-hook").unwrap();
        let p = webhook_payload(&input(), &name, 1_800_000_000_000);
        assert_eq!(p["type"], "approval.requested");
        assert_eq!(p["channel"], "audit-hook");
        assert_eq!(p["approval"]["url"], input().url);
        assert_eq!(p["approval"]["expiresAt"], "2027-01-15T08:00:00.000Z");
        assert!(!p.to_string().contains("taskToken"));
    }

    #[test]
    fn channels_config_is_checked_and_never_repeats_a_url_or_secret() {
        let ok = r#"{"deploys": {"kind": "slack", "url": "https://hooks.slack.com/services/T/B/s3cr3t"},
                     "ops.teams": {"kind": "teams", "url": "https://example.webhook.office.com/x"},
                     "audit_hook": {"kind": "webhook", "url": "https://hooks.example.com/r", "secret": "whsec_0123456789abcdef"}}"#;
        let c = ChatChannels::parse(ok, https).unwrap();
        assert_eq!(c.find("deploys").map(|n| n.to_string()).as_deref(), Some("deploys"));
        assert!(c.find("Deploys").is_none() && c.find("nope").is_none());
        let d = c.get(&ChannelName::parse("deploys").unwrap()).unwrap();
        assert_eq!(d.kind, ChannelKind::Slack);
        assert!(!format!("{c:?}").contains("s3cr3t") && !format!("{c:?}").contains("whsec"), "{c:?}");
        assert_eq!(c.secrets().count(), 4);
        let e = scrub("TypeError: fetch failed: https://hooks.slack.com/services/T/B/s3cr3t (refused)", &c);
        assert_eq!(e, "TypeError: fetch failed: <redacted> (refused)");
        let err = |j: &str| ChatChannels::parse(j, https).unwrap_err();
        for (bad, says) in [
            ("[1]", "JSON object"),
            (r#"{"Bad Name": {"kind": "slack", "url": "https://x.example"}}"#, "channel name"),
            (r#"{"d": {"kind": "irc", "url": "https://s3cr3t.example"}}"#, "\"d\" must be"),
            (r#"{"d": {"kind": "slack", "url": "http://s3cr3t.example"}}"#, "\"d\": url must be an https"),
            (r#"{"d": {"kind": "webhook", "url": "https://s3cr3t.example"}}"#, "needs a signing secret"),
            (r#"{"d": {"kind": "webhook", "url": "https://x.example", "secret": "short"}}"#, "at least 16"),
            (r#"{"d": {"kind": "slack", "url": "https://x.example", "secret": "s3cr3t-0123456789"}}"#, "no secret"),
        ] {
            let e = err(bad);
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("s3cr3t"), "{e}");
        }
    }
}
