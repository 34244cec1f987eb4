//! Approval emails (request, reminder and escalation, en/ja) and the SES v2 SendEmail request body. The message only
//! links to the approval page: no decision links, so a mail scanner opening it decides nothing.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::base::corrupt::CorruptValue;
use crate::base::locale::Locale;
use crate::base::time::format_rfc3339;

/// Where an approval's request mail stands (`approvals.mail_state`): the cron retries `failed` ones and
/// `pending` ones whose sender died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailState {
    /// Nobody to notify, or mail is off.
    None,
    /// Stored, not sent yet (the mail goes out after the registration's response).
    Pending,
    Sent,
    Failed,
}

impl MailState {
    pub const ALL: [Self; 4] = [Self::None, Self::Pending, Self::Sent, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Failed => "failed",
        }
    }

    pub fn from_stored(s: &str) -> Result<Self, CorruptValue> {
        Self::ALL.into_iter().find(|m| m.as_str() == s).ok_or_else(|| CorruptValue::new("approvals.mail_state", s))
    }

    /// The state a registration starts in.
    pub fn initial(recipients: usize) -> Self {
        if recipients == 0 {
            Self::None
        } else {
            Self::Pending
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    Request,
    Reminder,
    /// The approval was escalated to the recipient (core::domain::schedule), with the registrant's note.
    Escalation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// What an approval email says.
pub struct MailInput<'a> {
    pub kind: MailKind,
    pub title: &'a str,
    pub summary: &'a str,
    pub url: &'a str,
    /// Who/what asked, e.g. the state machine or execution name from `context` (the registrant's own words).
    pub requested_by: Option<&'a str>,
    /// The authenticated registrant (`api-key:…` / `client:…`): what ringi itself vouches for.
    pub registered_by: Option<&'a str>,
    pub expires_at_ms: i64,
    /// The verdict ringi delivers itself if nobody decides in time (`onExpiry`).
    pub on_expiry: Option<crate::base::status::Verdict>,
    /// Japanese comes with the English text below it.
    pub locale: Locale,
    /// An escalation's note (the registrant's words), shown under the lead.
    pub note: Option<&'a str>,
}

pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Header values must not carry line breaks (header injection through a title).
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().chars().take(150).collect()
}

struct Texts {
    lead: &'static str,
    requested_by: &'static str,
    registered_by: &'static str,
    expires: &'static str,
    open: &'static str,
    footer: &'static str,
    /// What happens without a decision (`onExpiry`): rejected, approved.
    on_expiry: [&'static str; 2],
    note: &'static str,
}

const EN_REQUEST: Texts = Texts {
    lead: "Your approval is requested.",
    requested_by: "Requested by",
    registered_by: "Registered by",
    expires: "Decide before",
    open: "Open the request",
    footer: "Opening the link decides nothing: you sign in and choose Approve or Reject on the page.",
    on_expiry: [
        "If nobody decides by then, ringi rejects it automatically.",
        "If nobody decides by then, ringi approves it automatically.",
    ],
    note: "Note",
};
const EN_REMINDER: Texts = Texts { lead: "Reminder: this request is still waiting for your decision.", ..EN_REQUEST };
const JA_REQUEST: Texts = Texts {
    lead: "承認依頼が届いています。",
    requested_by: "依頼元",
    registered_by: "登録元",
    expires: "期限",
    open: "依頼を開く",
    footer: "リンクを開いただけでは何も決まりません。サインイン後、画面で「承認」または「却下」を選んでください。",
    on_expiry: [
        "期限までに誰も判断しない場合、ringi が自動的に却下します。",
        "期限までに誰も判断しない場合、ringi が自動的に承認します。",
    ],
    note: "メモ",
};
const JA_REMINDER: Texts = Texts {
    lead: "リマインダー：この依頼はまだあなたの判断を待っています。", ..JA_REQUEST
};
const EN_ESCALATION: Texts = Texts {
    lead: "Escalated to you: this request has not been decided in time, and you can now decide it too.",
    ..EN_REQUEST
};
const JA_ESCALATION: Texts = Texts {
    lead: "エスカレーション：この依頼は期限内に判断されなかったため、あなたも判断できるようになりました。",
    ..JA_REQUEST
};

fn texts(kind: MailKind, ja: bool) -> &'static Texts {
    match (kind, ja) {
        (MailKind::Request, false) => &EN_REQUEST,
        (MailKind::Reminder, false) => &EN_REMINDER,
        (MailKind::Request, true) => &JA_REQUEST,
        (MailKind::Reminder, true) => &JA_REMINDER,
        (MailKind::Escalation, false) => &EN_ESCALATION,
        (MailKind::Escalation, true) => &JA_ESCALATION,
    }
}

pub fn compose(m: &MailInput<'_>) -> Mail {
    let ja = m.locale == Locale::Ja;
    // Minute precision reads better in a mail: "2027-01-15 08:00 UTC".
    let expires = format!("{} UTC", format_rfc3339(m.expires_at_ms)[..16].replace('T', " "));
    let title = one_line(m.title);
    let prefix = match (m.kind, ja) {
        (MailKind::Request, false) => "Approval requested",
        (MailKind::Reminder, false) => "Reminder: approval requested",
        (MailKind::Request, true) => "承認依頼",
        (MailKind::Reminder, true) => "リマインダー：承認依頼",
        (MailKind::Escalation, false) => "Escalated: approval requested",
        (MailKind::Escalation, true) => "エスカレーション：承認依頼",
    };
    let subject = format!("[ringi] {prefix}: {title}");
    let langs: Vec<&Texts> =
        if ja { vec![texts(m.kind, true), texts(m.kind, false)] } else { vec![texts(m.kind, false)] };

    let mut text = String::new();
    let mut html = String::from(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;line-height:1.5;max-width:36rem\">",
    );
    for t in &langs {
        text.push_str(&format!("{}\n\n{}\n", t.lead, m.title));
        html.push_str(&format!("<p>{}</p><h2 style=\"font-size:1.2rem\">{}</h2>", t.lead, escape_html(m.title)));
        if let Some(note) = m.note.filter(|n| !n.is_empty()) {
            text.push_str(&format!("{}: {note}\n", t.note));
            html.push_str(&format!(
                "<p style=\"white-space:pre-wrap\"><strong>{}:</strong> {}</p>",
                t.note,
                escape_html(note)
            ));
        }
        if !m.summary.is_empty() {
            text.push_str(&format!("{}\n", m.summary));
            html.push_str(&format!("<p style=\"white-space:pre-wrap\">{}</p>", escape_html(m.summary)));
        }
        for (label, value) in [(t.requested_by, m.requested_by), (t.registered_by, m.registered_by)] {
            if let Some(value) = value {
                text.push_str(&format!("{label}: {value}\n"));
                html.push_str(&format!("<p>{label}: {}</p>", escape_html(value)));
            }
        }
        let auto = m.on_expiry.map(|v| t.on_expiry[usize::from(v == crate::base::status::Verdict::Approve)]);
        let (auto_text, auto_html) =
            auto.map_or((String::new(), String::new()), |a| (format!("{a}\n"), format!("<br>{a}")));
        text.push_str(&format!("{}: {expires}\n{auto_text}\n{}: {}\n\n{}\n\n", t.expires, t.open, m.url, t.footer));
        html.push_str(&format!(
            "<p>{}: {expires}{auto_html}</p><p><a href=\"{url}\">{}</a><br><span style=\"color:#555\">{url}</span></p><p style=\"color:#555;font-size:.9rem\">{}</p><hr>",
            t.expires,
            t.open,
            t.footer,
            url = escape_html(m.url)
        ));
    }
    html.push_str("</body></html>");
    Mail { subject, text: text.trim_end().to_owned(), html }
}

/// Why an approval reached someone after its registration (delegation.rs): the lines a hand-over mail
/// starts with, above the request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover<'a> {
    /// An approver handed their slot on, with their note.
    Delegated { by: &'a str, note: Option<&'a str> },
    /// Out-of-office routing at registration: `absent` is away, with their note.
    Routed { absent: &'a str, note: Option<&'a str> },
    /// An operator changed the approvers, and why.
    Reassigned { by: &'a str, reason: &'a str },
}

impl Handover<'_> {
    /// (English, Japanese) lead line, and the note or reason.
    fn lines(&self) -> ([String; 2], Option<&str>) {
        match *self {
            Self::Delegated { by, note } => (
                [
                    format!("{by} delegated this approval to you."),
                    format!("{by} さんがこの承認をあなたに委任しました。"),
                ],
                note,
            ),
            Self::Routed { absent, note } => (
                [
                    format!("{absent} is out of office: this approval was sent to you instead."),
                    format!("{absent} さんは不在のため、この承認はあなたに回されました。"),
                ],
                note,
            ),
            Self::Reassigned { by, reason } => (
                [
                    format!("{by} (operator) made you an approver of this request."),
                    format!("運用担当者 {by} さんがあなたをこの依頼の承認者にしました。"),
                ],
                Some(reason),
            ),
        }
    }
}

/// The request mail for someone an approval was handed to: the hand-over first (who, their note), then the
/// request as [`compose`] writes it (`m.kind` is ignored: it is a request to them).
pub fn compose_handover(m: &MailInput<'_>, h: &Handover<'_>) -> Mail {
    let ja = m.locale == Locale::Ja;
    let base = compose(&MailInput { kind: MailKind::Request, ..*m });
    let ([en, ja_line], note) = h.lines();
    let leads: Vec<(&str, String)> = if ja { vec![("メモ", ja_line), ("Note", en)] } else { vec![("Note", en)] };
    let prefix = if ja { "承認の委任" } else { "Approval handed to you" };
    let mut text = String::new();
    let mut html = String::new();
    for (label, lead) in &leads {
        text.push_str(&format!("{lead}\n"));
        html.push_str(&format!("<p><strong>{}</strong></p>", escape_html(lead)));
        if let Some(note) = note {
            text.push_str(&format!("{label}: {note}\n"));
            html.push_str(&format!("<p style=\"white-space:pre-wrap\">{label}: {}</p>", escape_html(note)));
        }
    }
    text.push('\n');
    let body_at = base.html.find("<p>").unwrap_or(0);
    Mail {
        subject: format!("[ringi] {prefix}: {}", one_line(m.title)),
        text: format!("{text}{}", base.text),
        html: format!("{}{html}{}", &base.html[..body_at], &base.html[body_at..]),
    }
}

/// SES v2 `SendEmail` (`POST /v2/email/outbound-emails`) JSON body: one recipient per message.
pub fn ses_send_email_body(from: &str, to: &str, mail: &Mail) -> String {
    json!({
        "FromEmailAddress": from,
        "Destination": {"ToAddresses": [to]},
        "Content": {"Simple": {
            "Subject": {"Data": mail.subject, "Charset": "UTF-8"},
            "Body": {
                "Text": {"Data": mail.text, "Charset": "UTF-8"},
                "Html": {"Data": mail.html, "Charset": "UTF-8"}
            }
        }},
        "EmailTags": [{"Name": "app", "Value": "ringi"}]
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(locale: Locale) -> MailInput<'static> {
        MailInput {
            kind: MailKind::Request,
            title: "Deploy <v2>\r\nBcc: evil@example.com",
            summary: "Rolls out & migrates",
            url: "https://ringi.example/a/abcdefghijklmnopqrstuv",
            requested_by: Some("arn:aws:states:…:execution:deploy:42"),
            registered_by: Some("api-key:3f2a9c1e"),
            expires_at_ms: 1_800_000_000_000,
            on_expiry: None,
            locale,
            note: None,
        }
    }

    #[test]
    fn english_mail_has_link_expiry_and_no_injection() {
        let m = compose(&input(Locale::En));
        assert!(!m.subject.contains('\n') && !m.subject.contains('\r'), "{}", m.subject);
        assert!(m.subject.starts_with("[ringi] Approval requested: Deploy <v2>"));
        assert!(m.text.contains("https://ringi.example/a/abcdefghijklmnopqrstuv"));
        assert!(m.text.contains("2027-01-15 08:00 UTC"));
        assert!(m.html.contains("Deploy &lt;v2&gt;") && !m.html.contains("<v2>"));
        assert!(m.html.contains("Rolls out &amp; migrates"));
        assert!(!m.text.contains("approve?") && !m.html.contains("decision="), "no decision links");
        // What the registrant wrote and what ringi authenticated, apart.
        assert!(m.text.contains("Requested by: arn:aws:states:…:execution:deploy:42"));
        assert!(m.text.contains("Registered by: api-key:3f2a9c1e"));
        assert!(compose(&input(Locale::Ja)).text.contains("登録元: api-key:3f2a9c1e"));
    }

    #[test]
    fn japanese_mail_comes_with_english() {
        let m = compose(&input(Locale::Ja));
        assert!(m.subject.contains("承認依頼"));
        assert!(m.text.contains("依頼を開く") && m.text.contains("Open the request"));
        let r = compose(&MailInput { kind: MailKind::Reminder, ..input(Locale::En) });
        assert!(!r.text.contains("automatically"));
        let auto = compose(&MailInput { on_expiry: Some(crate::base::status::Verdict::Reject), ..input(Locale::Ja) });
        assert!(auto.text.contains("自動的に却下") && auto.text.contains("ringi rejects it automatically"));
        assert!(auto.html.contains("ringi rejects it automatically"));
        assert!(r.subject.starts_with("[ringi] Reminder"));
    }

    #[test]
    fn escalation_mail_carries_the_note_escaped_in_both_languages() {
        let m = compose(&MailInput {
            kind: MailKind::Escalation,
            note: Some("No answer <in> 2 days"),
            ..input(Locale::En)
        });
        assert!(m.subject.starts_with("[ringi] Escalated: approval requested"), "{}", m.subject);
        assert!(m.text.contains("Escalated to you") && m.text.contains("Note: No answer <in> 2 days"));
        assert!(m.html.contains("No answer &lt;in&gt; 2 days"));
        let ja = compose(&MailInput { kind: MailKind::Escalation, note: Some("至急"), ..input(Locale::Ja) });
        assert!(
            ja.subject.contains("エスカレーション") && ja.text.contains("メモ: 至急") && ja.text.contains("Note: 至急")
        );
        assert!(!compose(&input(Locale::En)).text.contains("Note:"), "no note, no line");
    }

    #[test]
    fn a_handover_mail_says_who_and_carries_the_note_and_the_link() {
        let h = Handover::Delegated { by: "alice@example.com", note: Some("<b>on leave</b>, please decide") };
        let m = compose_handover(&input(Locale::En), &h);
        assert!(m.subject.starts_with("[ringi] Approval handed to you: Deploy <v2>"), "{}", m.subject);
        assert!(m.text.starts_with("alice@example.com delegated this approval to you.\nNote: <b>on leave</b>"));
        assert!(m.text.contains("https://ringi.example/a/abcdefghijklmnopqrstuv"));
        assert!(m.html.contains("Note: &lt;b&gt;on leave&lt;/b&gt;") && !m.html.contains("<b>on leave"));
        let ja = compose_handover(&input(Locale::Ja), &Handover::Routed { absent: "bob", note: None });
        assert!(ja.subject.contains("承認の委任") && ja.text.contains("bob さんは不在のため"));
        assert!(ja.text.contains("bob is out of office"), "English below the Japanese");
        let r = compose_handover(
            &input(Locale::En),
            &Handover::Reassigned { by: "ops@example.com", reason: "team change" },
        );
        assert!(r.text.contains("Note: team change"));
    }

    #[test]
    fn mail_states_round_trip() {
        for m in MailState::ALL {
            assert_eq!(MailState::from_stored(m.as_str()), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert!(MailState::from_stored("lost").is_err());
        assert_eq!((MailState::initial(0), MailState::initial(2)), (MailState::None, MailState::Pending));
    }

    #[test]
    fn ses_body_shape() {
        let m = compose(&input(Locale::En));
        let v: serde_json::Value =
            serde_json::from_str(&ses_send_email_body("ringi@example.com", "a@example.com", &m)).unwrap();
        assert_eq!(v["Destination"]["ToAddresses"][0], "a@example.com");
        assert_eq!(v["Content"]["Simple"]["Subject"]["Data"], m.subject);
        assert!(v["Content"]["Simple"]["Body"]["Html"]["Data"].as_str().unwrap().contains("<a href="));
    }
}
