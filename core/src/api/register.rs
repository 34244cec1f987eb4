//! `POST /api/v1/approvals`: a registration body (a serde DTO) validated into a [`NewApproval`].

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::adapters::aws_target::{AwsTarget, AwsTargets, RequestedTarget};
use crate::adapters::chat::{ChannelName, ChatChannels, MAX_CHANNELS};
use crate::base::body::{first_item, from_object, json_value, top_field};
use crate::base::error::ApiError;
use crate::base::ids::{ApprovalId, TaskToken};
use crate::base::locale::Locale;
use crate::base::principal::Principal;
use crate::base::principal::{approvers, checked_principal, MAX_APPROVERS};
use crate::base::text::strip_invisible;
use crate::base::text::valid_email;
use crate::base::time::parse_rfc3339;
use crate::domain::form::{strip_form, validate_form, FormField};
use crate::domain::on_expiry::OnExpiry;
use crate::domain::quorum::Quorum;
use crate::domain::schedule::{parse_escalation, parse_reminders, Schedule};

pub const TITLE_MAX_CHARS: usize = 200;
pub const SUMMARY_MAX_CHARS: usize = 4_000;
pub const DETAILS_MAX_BYTES: usize = 32 * 1024;
pub const CONTEXT_MAX_BYTES: usize = 4 * 1024;
pub const MAX_EXPIRY_MS: i64 = 366 * 24 * 3600 * 1000;

/// A validated registration, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    /// `None`: the caller let ringi generate one.
    pub id: Option<ApprovalId>,
    pub token: TaskToken,
    pub approvers: Vec<Principal>,
    pub quorum: Quorum,
    pub title: String,
    pub summary: String,
    pub details: Map<String, Value>,
    pub form: Vec<FormField>,
    /// The approvers' deadline (shown and enforced; see [`NewApproval::with_on_expiry_lead`]).
    pub expires_at: i64,
    /// The task's own deadline when it is later than the approvers' (an outcome on expiry).
    pub task_expires_at: Option<i64>,
    pub notify: Vec<String>,
    /// The chat channels `notify` named (`{"channel": …}`), each one configured in `CHAT_CHANNELS`.
    pub channels: Vec<ChannelName>,
    pub context: Map<String, Value>,
    pub locale: Option<Locale>,
    /// Who asked (people: `sub` / email): they see the approval but may not decide it, unless
    /// `allow_self_approval` (see `crate::domain::self_approval`).
    pub requested_by: Vec<Principal>,
    pub allow_self_approval: bool,
    /// What ringi does when nobody decides in time (`crate::domain::on_expiry`).
    pub on_expiry: OnExpiry,
    /// SHA-256 (hex) of the registration object as received (canonical JSON, envelope removed): tells a
    /// redelivery of the same request from a different request for the same task.
    pub request_sha256: String,
    /// `reminders` and `escalation` (core::schedule), resolved to times.
    pub schedule: Schedule,
    /// The account and region the callback goes to (`AWS_TARGETS`); `None`: this ringi's one account.
    pub target: Option<AwsTarget>,
}

/// The registration body as sent. Every member is optional here (`null` = absent) so that a missing one is
/// reported by [`RegistrationBody::validate`] under its own name, not as serde's "missing field".
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrationBody {
    approval_id: Option<String>,
    task_token: Option<String>,
    approvers: Option<Vec<Principal>>,
    quorum: Option<Quorum>,
    title: Option<String>,
    summary: Option<String>,
    details: Option<Map<String, Value>>,
    form: Option<Vec<FormField>>,
    expires_at: Option<String>,
    timeout_seconds: Option<i64>,
    /// Emails (`"a@x"` or `{"email": …}`) and chat channels (`{"channel": …}`), checked item by item.
    notify: Option<Vec<Value>>,
    context: Option<Map<String, Value>>,
    locale: Option<Locale>,
    requested_by: Option<Vec<Principal>>,
    allow_self_approval: Option<bool>,
    on_expiry: Option<OnExpiry>,
    /// Checked item by item (core::schedule), so that each error names `reminders[i]`.
    reminders: Option<Vec<Value>>,
    escalation: Option<Value>,
    /// Where the workflow runs, for callers that send no EventBridge envelope.
    aws: Option<AwsField>,
}

/// `aws`: only the account and region; a role or an endpoint is never the registrant's to choose.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AwsField {
    account_id: Option<String>,
    region: Option<String>,
}

/// What a member of the body must be, for a value serde could not take.
fn explain(path: &str, serde_message: String) -> ApiError {
    let nested = path != top_field(path);
    let must = |m: &str| ApiError::invalid(path, m);
    match top_field(path) {
        "approvers" if nested => {
            ApiError::invalid(first_item(path), "must be {\"sub\": …}, {\"email\": …} or {\"group\": …}")
        }
        "approvers" => must("must be an array"),
        "notify" => must(&format!(
            "must be an array of at most {MAX_APPROVERS} emails and {MAX_CHANNELS} {{\"channel\": …}} entries"
        )),
        // A form definition's errors are serde's own ("unknown variant `date`"), reported on `form`.
        "form" if nested => ApiError::invalid("form", serde_message),
        "form" => must("must be an array of fields"),
        "quorum" => must("must be \"any\", \"all\" or a positive integer"),
        "details" | "context" => must("must be a JSON object"),
        "timeoutSeconds" => must("must be a positive integer"),
        "locale" => must("must be \"en\" or \"ja\""),
        "requestedBy" if nested => ApiError::invalid(first_item(path), "must be {\"sub\": …} or {\"email\": …}"),
        "requestedBy" => must("must be an array of {\"sub\": …} or {\"email\": …}"),
        "allowSelfApproval" => must("must be true or false"),
        "onExpiry" => must("must be \"none\", \"reject\" or \"approve\""),
        "reminders" => must("must be an array of durations (\"PT4H\") or {\"beforeExpiry\": \"PT1H\"}"),
        "aws" if nested => must("must be a string"),
        "aws" => must("must be {\"accountId\": …, \"region\": …}"),
        _ => must("must be a string"),
    }
}

impl NewApproval {
    /// With an outcome on expiry, the registration's deadline is the task's and the approvers' ends
    /// `ON_EXPIRY_LEAD_SECONDS` before it (`on_expiry::deadlines`): one deadline shown and enforced, ringi's
    /// answer after it.
    pub fn with_on_expiry_lead(mut self, now: i64, lead_ms: i64) -> Self {
        let (mine, task) = crate::domain::on_expiry::deadlines(self.on_expiry, now, self.expires_at, lead_ms);
        self.expires_at = mine;
        self.task_expires_at = (task != mine).then_some(task);
        self
    }
}

/// An EventBridge event delivered by an API destination carries the registration in `detail`.
pub fn unwrap_event_envelope(v: Value) -> Value {
    split_event_envelope(v).0
}

/// The registration and, for an EventBridge event, the `account` and `region` it came from (where the
/// workflow runs).
fn split_event_envelope(v: Value) -> (Value, (Option<String>, Option<String>)) {
    match v {
        Value::Object(mut o) if o.contains_key("detail-type") && o.get("detail").is_some_and(Value::is_object) => {
            let text = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
            let origin = (text(&o, "account"), text(&o, "region"));
            (o.remove("detail").unwrap_or(Value::Null), origin)
        }
        other => (other, (None, None)),
    }
}

/// Validates a registration body; `now` is Unix ms. `notify` and `escalation.to` may name the approval's email
/// approvers and addresses in `mail_allowed_domains` (`MAIL_ALLOWED_DOMAINS`; the rule of every mail,
/// `crate::domain::recipients::may_mail`), and `notify` no chat channel. Every error names the offending field.
pub fn parse_registration(body: &[u8], now: i64, mail_allowed_domains: &[String]) -> Result<NewApproval, ApiError> {
    parse_registration_with_channels(body, now, mail_allowed_domains, &ChatChannels::default(), &AwsTargets::default())
}

/// [`parse_registration`], where `notify` may also name the channels of `CHAT_CHANNELS`, and the target must
/// be one of `AWS_TARGETS` (`crate::adapters::aws_target`).
pub fn parse_registration_with_channels(
    body: &[u8],
    now: i64,
    mail_allowed_domains: &[String],
    channels: &ChatChannels,
    targets: &AwsTargets,
) -> Result<NewApproval, ApiError> {
    let (v, envelope) = split_event_envelope(json_value(body)?);
    let request_sha256 = crate::base::hex::hex_sha256(v.to_string().as_bytes());
    let mut dto: RegistrationBody = from_object(v, explain)?;
    let explicit = dto.aws.take().map(|a| (a.account_id, a.region));
    let target = targets.resolve(&RequestedTarget { envelope, explicit })?;
    Ok(NewApproval { target, ..dto.validate(now, mail_allowed_domains, channels, request_sha256)? })
}

fn check_quorum(quorum: Quorum, approvers: &[Principal]) -> Result<Quorum, ApiError> {
    let has_group = approvers.iter().any(|p| matches!(p, Principal::Group(_)));
    match quorum {
        Quorum::N(n) if n as usize > approvers.len() && !has_group => Err(ApiError::invalid(
            "quorum",
            format!("needs {n} approvals but only {} approvers are listed", approvers.len()),
        )),
        q => Ok(q),
    }
}

fn bounded_object(name: &str, o: Option<Map<String, Value>>, max_bytes: usize) -> Result<Map<String, Value>, ApiError> {
    let o = o.unwrap_or_default();
    if Value::Object(o.clone()).to_string().len() > max_bytes {
        return Err(ApiError::invalid(name, format!("must be at most {max_bytes} bytes of JSON")));
    }
    Ok(o)
}

fn expiry(expires_at: Option<&str>, timeout_seconds: Option<i64>, now: i64) -> Result<i64, ApiError> {
    let at = match (expires_at, timeout_seconds) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("expiresAt", "give expiresAt or timeoutSeconds, not both")),
        (None, None) => return Err(ApiError::invalid("expiresAt", "expiresAt or timeoutSeconds is required")),
        (Some(s), None) => parse_rfc3339("expiresAt", s)?,
        (None, Some(secs)) if secs > 0 => now.saturating_add(secs.saturating_mul(1000)),
        (None, Some(_)) => return Err(ApiError::invalid("timeoutSeconds", "must be a positive integer")),
    };
    let field = if expires_at.is_some() { "expiresAt" } else { "timeoutSeconds" };
    if at <= now {
        return Err(ApiError::invalid(field, "must be in the future"));
    }
    if at - now > MAX_EXPIRY_MS {
        return Err(ApiError::invalid(field, "must be at most one year ahead"));
    }
    Ok(at)
}

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
fn notify(
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

impl RegistrationBody {
    /// The domain value: every rule serde's types do not already enforce, in the order the fields are
    /// listed (the first failing one is reported).
    pub fn validate(
        self,
        now: i64,
        mail_allowed_domains: &[String],
        chat_channels: &ChatChannels,
        request_sha256: String,
    ) -> Result<NewApproval, ApiError> {
        let id = self.approval_id.as_deref().map(ApprovalId::parse_chosen).transpose()?;
        let token =
            TaskToken::parse(self.task_token.as_deref().ok_or_else(|| ApiError::invalid("taskToken", "is required"))?)?;
        let approvers = approvers(self.approvers)?;
        let quorum = check_quorum(self.quorum.unwrap_or(Quorum::Any), &approvers)?;
        let requested_by = crate::domain::self_approval::requesters(self.requested_by)?;
        let allow_self_approval = self.allow_self_approval.unwrap_or(false);
        if !allow_self_approval {
            crate::domain::self_approval::check_reachable(&approvers, &requested_by, quorum)?;
        }
        // One-line texts lose bidi/zero-width controls, which could make them render as something else.
        let title = self.title.ok_or_else(|| ApiError::invalid("title", "is required"))?;
        let title = strip_invisible(&title).trim().to_owned();
        if title.is_empty() || title.chars().count() > TITLE_MAX_CHARS {
            return Err(ApiError::invalid("title", format!("must be 1-{TITLE_MAX_CHARS} characters")));
        }
        let summary = self.summary.unwrap_or_default();
        if summary.chars().count() > SUMMARY_MAX_CHARS {
            return Err(ApiError::invalid("summary", format!("must be at most {SUMMARY_MAX_CHARS} characters")));
        }
        let details = bounded_object("details", self.details, DETAILS_MAX_BYTES)?;
        let context = bounded_object("context", self.context, CONTEXT_MAX_BYTES)?;
        let mut form = self.form.unwrap_or_default();
        strip_form(&mut form);
        validate_form(&form)?;
        let expires_at = expiry(self.expires_at.as_deref(), self.timeout_seconds, now)?;
        let (notify, channels) = notify(self.notify, &approvers, mail_allowed_domains, chat_channels)?;
        let schedule = Schedule {
            reminders: self.reminders.map(|r| parse_reminders(&r, now, expires_at)).transpose()?,
            // The escalation's principals are mailed when it happens: the same rule as `notify`.
            escalation: self
                .escalation
                .map(|e| {
                    parse_escalation(&e, now, expires_at, |field, p| {
                        let p = checked_principal(field, p)?;
                        crate::domain::recipients::check_principal(field, &p, &approvers, mail_allowed_domains)?;
                        Ok(p)
                    })
                })
                .transpose()?,
        };
        Ok(NewApproval {
            id,
            token,
            approvers,
            quorum,
            title,
            summary,
            details,
            form,
            expires_at,
            task_expires_at: None,
            notify,
            channels,
            context,
            locale: self.locale,
            requested_by,
            allow_self_approval,
            on_expiry: self.on_expiry.unwrap_or_default(),
            request_sha256,
            schedule,
            target: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;

    fn base() -> Value {
        json!({"taskToken": "tok", "approvers": [{"email": "Alice@Example.com"}, {"group": "finance"}],
               "title": "Deploy v2", "timeoutSeconds": 3600})
    }

    fn field_of(v: Value) -> String {
        match parse_registration(v.to_string().as_bytes(), NOW, &[]).unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        }
    }

    fn with(k: &str, val: Value) -> Value {
        let mut b = base();
        b[k] = val;
        b
    }

    #[test]
    fn request_fingerprint_is_the_same_for_a_redelivery_and_differs_for_another_request() {
        let parse = |v: &Value, now| parse_registration(v.to_string().as_bytes(), now, &[]).unwrap().request_sha256;
        let first = parse(&base(), NOW);
        // A redelivery seconds later (timeoutSeconds counts from receipt, the request itself is unchanged).
        assert_eq!(parse(&base(), NOW + 5_000), first);
        // The same request inside an EventBridge envelope (its id and time differ per delivery).
        let event = json!({"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "detail": base()});
        assert_eq!(parse(&event, NOW), first);
        assert_ne!(parse(&with("title", json!("Deploy v3")), NOW), first);
    }

    #[test]
    fn notify_names_only_approvers_or_allowed_domains() {
        let parse = |notify: Value, allowed: &[String]| {
            parse_registration(with("notify", notify).to_string().as_bytes(), NOW, allowed).map(|a| a.notify)
        };
        // The approvers' own addresses are always fine (case does not matter).
        assert_eq!(parse(json!(["ALICE@example.com"]), &[]).unwrap(), vec!["alice@example.com"]);
        let field = |r: Result<Vec<String>, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(parse(json!(["alice@example.com", "ops@example.org"]), &[])), "notify[1]");
        let allowed = vec!["example.org".to_owned()];
        assert_eq!(parse(json!(["ops@example.org"]), &allowed).unwrap(), vec!["ops@example.org"]);
        // A look-alike domain is not the allowed one.
        assert_eq!(field(parse(json!(["ops@example.org.evil.test"]), &allowed)), "notify[0]");
        assert_eq!(field(parse(json!(["ops@sub.example.org"]), &allowed)), "notify[0]");
    }

    #[test]
    fn escalation_mails_only_approvers_or_allowed_domains() {
        let parse = |to: Value, allowed: &[String]| {
            let b = with("escalation", json!({"after": "PT10M", "to": to}));
            parse_registration(b.to_string().as_bytes(), NOW, allowed).map(|a| a.schedule.escalation.unwrap().to)
        };
        let field = |r: Result<Vec<Principal>, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        // Without MAIL_ALLOWED_DOMAINS: an approver's own address, and principals nobody mails.
        assert!(parse(json!([{"email": "ALICE@example.com"}, {"sub": "boss"}, {"group": "leads"}]), &[]).is_ok());
        assert_eq!(
            field(parse(json!([{"sub": "boss"}, {"email": "boss@example.com"}]), &[])),
            "escalation.to[1].email"
        );
        let allowed = vec!["example.com".to_owned()];
        assert_eq!(parse(json!([{"email": "boss@example.com"}]), &allowed).unwrap().len(), 1);
        assert_eq!(field(parse(json!([{"email": "boss@example.com.evil.test"}]), &allowed)), "escalation.to[0].email");
    }

    #[test]
    fn notify_names_configured_chat_channels_only() {
        let chat = ChatChannels::parse(
            r#"{"deploys": {"kind": "slack", "url": "https://hooks.slack.com/services/x"},
                "ops": {"kind": "teams", "url": "https://example.webhook.office.com/y"}}"#,
            |_| Ok(()),
        )
        .unwrap();
        let parse = |notify: Value| {
            let b = with("notify", notify).to_string();
            parse_registration_with_channels(b.as_bytes(), NOW, &[], &chat, &AwsTargets::default())
        };
        let a = parse(json!([{"email": "alice@example.com"}, {"channel": "deploys"}, {"channel": "ops"},
                             {"channel": "deploys"}]))
        .unwrap();
        assert_eq!(a.notify, vec!["alice@example.com"]);
        assert_eq!(a.channels.iter().map(ChannelName::as_str).collect::<Vec<_>>(), ["deploys", "ops"]);
        // Only channels: nobody is mailed.
        let a = parse(json!([{"channel": "ops"}])).unwrap();
        assert!(a.notify.is_empty() && a.channels.len() == 1);
        let field = |r: Result<NewApproval, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(parse(json!(["alice@example.com", {"channel": "nope"}]))), "notify[1].channel");
        // A URL is not a channel name.
        assert_eq!(field(parse(json!([{"channel": "https://hooks.slack.com/services/x"}]))), "notify[0].channel");
        assert_eq!(field(parse(json!([{"email": "x"}]))), "notify[0].email");
        assert_eq!(field(parse(json!([{"channel": "ops", "url": "https://x"}]))), "notify[0]");
        // Without CHAT_CHANNELS no channel exists.
        assert_eq!(field_of(with("notify", json!([{"channel": "deploys"}]))), "notify[0].channel");
        assert!(parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().channels.is_empty());
    }

    #[test]
    fn minimal_registration() {
        let a = parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!(a.expires_at, NOW + 3_600_000);
        assert_eq!(a.approvers[0], Principal::Email("alice@example.com".into()));
        assert_eq!(a.notify, vec!["alice@example.com"]);
        assert_eq!(a.quorum, Quorum::Any);
        assert!(a.id.is_none());
    }

    #[test]
    fn eventbridge_envelope_is_accepted() {
        let ev = json!({"version": "0", "detail-type": "ringi.approval", "source": "x", "detail": base()});
        assert!(parse_registration(ev.to_string().as_bytes(), NOW, &[]).is_ok());
    }

    #[test]
    fn the_target_comes_from_the_envelope_or_aws_and_must_be_configured() {
        let targets = AwsTargets::parse(
            r#"{"111111111111": {"regions": ["eu-west-1"]}, "222222222222": {"regions": ["us-east-1"]}}"#,
        )
        .unwrap();
        let parse = |v: Value| {
            parse_registration_with_channels(v.to_string().as_bytes(), NOW, &[], &ChatChannels::default(), &targets)
        };
        let event = |account: &str, region: &str, detail: Value| {
            json!({"version": "0", "id": "e1", "detail-type": "ringi.approval.requested", "source": "x",
                   "account": account, "region": region, "detail": detail})
        };
        let t = parse(event("222222222222", "us-east-1", base())).unwrap().target.unwrap();
        assert_eq!((t.account.as_str(), t.region.as_str()), ("222222222222", "us-east-1"));
        let direct = with("aws", json!({"accountId": "111111111111", "region": "eu-west-1"}));
        assert_eq!(parse(direct.clone()).unwrap().target.unwrap().region.as_str(), "eu-west-1");
        // The target is not part of the request's fingerprint: a redelivery still matches.
        assert_eq!(
            parse(event("222222222222", "us-east-1", base())).unwrap().request_sha256,
            parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().request_sha256
        );
        let field = |r: Result<NewApproval, ApiError>| match r.unwrap_err() {
            ApiError::Invalid { field, .. } => field,
            e => panic!("{e:?}"),
        };
        assert_eq!(field(parse(event("333333333333", "us-east-1", base()))), "account");
        assert_eq!(field(parse(event("222222222222", "eu-west-1", base()))), "region");
        assert_eq!(field(parse(base())), "account");
        assert!(parse(event("111111111111", "eu-west-1", direct.clone())).is_ok(), "agrees with the envelope");
        let mut spoofed = direct;
        spoofed["aws"]["accountId"] = json!("222222222222");
        assert_eq!(field(parse(event("111111111111", "eu-west-1", spoofed))), "aws.accountId");
        // A registrant names no role and no endpoint.
        assert_eq!(
            field(parse(with(
                "aws",
                json!({"accountId": "111111111111", "region": "eu-west-1",
                                                   "roleArn": "arn:aws:iam::111111111111:role/x"})
            ))),
            "aws.roleArn"
        );
        assert_eq!(field(parse(with("aws", json!({"endpoint": "https://evil.test"})))), "aws.endpoint");
        assert_eq!(field(parse(with("aws", json!("111111111111")))), "aws");
        assert_eq!(field(parse(with("aws", json!({"accountId": 111111111111u64})))), "aws.accountId");
        // Without AWS_TARGETS: the envelope's origin is ignored, an explicit target refused.
        assert!(parse_registration(event("333333333333", "eu-west-1", base()).to_string().as_bytes(), NOW, &[])
            .unwrap()
            .target
            .is_none());
        assert_eq!(field_of(with("aws", json!({"accountId": "111111111111", "region": "eu-west-1"}))), "aws");
    }

    #[test]
    fn every_rule_names_its_field() {
        let mut no_token = base();
        no_token.as_object_mut().unwrap().remove("taskToken");
        assert_eq!(field_of(no_token), "taskToken");
        assert_eq!(field_of(with("taskToken", json!("x".repeat(2049)))), "taskToken");
        assert_eq!(field_of(with("approvers", json!([]))), "approvers");
        assert_eq!(field_of(with("approvers", json!([{"role": "x"}]))), "approvers[0]");
        assert_eq!(field_of(with("approvers", json!([{"email": "nope"}]))), "approvers[0].email");
        let mut three_of_two = with("quorum", json!(3));
        three_of_two["approvers"] = json!([{"sub": "a"}, {"sub": "b"}]);
        assert_eq!(field_of(three_of_two), "quorum");
        assert_eq!(field_of(with("quorum", json!("most"))), "quorum");
        assert_eq!(field_of(with("title", json!(""))), "title");
        assert_eq!(field_of(with("title", json!("t".repeat(201)))), "title");
        assert_eq!(field_of(with("summary", json!("s".repeat(4001)))), "summary");
        assert_eq!(field_of(with("details", json!([1]))), "details");
        assert_eq!(field_of(with("details", json!({"x": "y".repeat(DETAILS_MAX_BYTES)}))), "details");
        assert_eq!(field_of(with("form", json!([{"name": "a", "label": "A", "type": "date"}]))), "form");
        assert_eq!(field_of(with("form", json!([{"name": "a b", "label": "A", "type": "text"}]))), "form[0].name");
        assert_eq!(field_of(with("timeoutSeconds", json!(0))), "timeoutSeconds");
        assert_eq!(field_of(with("timeoutSeconds", json!(400 * 86_400))), "timeoutSeconds");
        assert_eq!(field_of(with("expiresAt", json!("2020-01-01T00:00:00Z"))), "expiresAt");
        let mut past = base();
        past.as_object_mut().unwrap().remove("timeoutSeconds");
        past["expiresAt"] = json!("2020-01-01T00:00:00Z");
        assert_eq!(field_of(past), "expiresAt");
        assert_eq!(field_of(with("notify", json!(["x"]))), "notify[0]");
        assert_eq!(field_of(with("locale", json!("fr"))), "locale");
        assert_eq!(field_of(with("approvalId", json!("short"))), "approvalId");
        assert_eq!(field_of(with("approvalId", json!("openapi-idem-0001"))), "approvalId");
        assert_eq!(field_of(with("title", json!("\u{202E}\u{200B}"))), "title");
        let long_help = json!([{"name": "a", "label": "A", "type": "text", "help": "h".repeat(501)}]);
        assert_eq!(field_of(with("form", long_help)), "form[0].help");
        assert_eq!(field_of(with("bogus", json!(1))), "bogus");
        assert_eq!(field_of(with("reminders", json!("PT1H"))), "reminders");
        assert_eq!(field_of(with("reminders", json!(["PT10M", "PT2H"]))), "reminders[1]");
        assert_eq!(
            field_of(with("escalation", json!({"after": "PT10M", "to": [{"email": "x"}]}))),
            "escalation.to[0].email"
        );
        assert_eq!(field_of(with("escalation", json!({"after": "PT2H", "to": [{"sub": "boss"}]}))), "escalation.after");
    }

    #[test]
    fn schedule_fields_resolve_to_times() {
        let mut b = with("reminders", json!(["PT10M", {"beforeExpiry": "PT5M"}]));
        b["escalation"] = json!({"after": "PT30M", "to": [{"email": "Boss@Example.com"}], "note": "ping"});
        let a = parse_registration(b.to_string().as_bytes(), NOW, &["example.com".to_owned()]).unwrap();
        assert_eq!(a.schedule.reminders, Some(vec![NOW + 600_000, NOW + 3_300_000]));
        let e = a.schedule.escalation.unwrap();
        assert_eq!(
            (e.at, e.to, e.note),
            (NOW + 1_800_000, vec![Principal::Email("boss@example.com".into())], Some("ping".into()))
        );
        // Omitted: the default reminder before expiry (None); `[]`: none at all.
        assert_eq!(parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap().schedule.reminders, None);
        let none = with("reminders", json!([]));
        assert_eq!(parse_registration(none.to_string().as_bytes(), NOW, &[]).unwrap().schedule.reminders, Some(vec![]));
    }

    #[test]
    fn values_of_the_wrong_type_say_what_the_field_must_be() {
        let said = |v: Value| match parse_registration(v.to_string().as_bytes(), NOW, &[]).unwrap_err() {
            ApiError::Invalid { field, message } => (field, message),
            e => panic!("{e:?}"),
        };
        let is = |f: &str, m: &str| (f.to_owned(), m.to_owned());
        assert_eq!(said(with("title", json!(1))), is("title", "must be a string"));
        assert_eq!(said(with("approvers", json!("x"))), is("approvers", "must be an array"));
        assert_eq!(said(with("approvers", json!([{"sub": "a"}, {"email": 5}]))).0, "approvers[1]");
        assert_eq!(said(with("notify", json!(["a@example.com", 1]))), is("notify[1]", "is not an email address"));
        assert_eq!(said(with("notify", json!([{"slack": "x"}]))).0, "notify[0]");
        assert_eq!(said(with("form", json!("x"))), is("form", "must be an array of fields"));
        assert_eq!(said(with("timeoutSeconds", json!("60"))), is("timeoutSeconds", "must be a positive integer"));
        assert_eq!(said(with("locale", json!(5))), is("locale", "must be \"en\" or \"ja\""));
        assert_eq!(said(with("taskToken", Value::Null)), is("taskToken", "is required"));
        assert_eq!(said(json!([base()])), is("body", "must be a JSON object"));
        assert_eq!(said(with("bogus", json!(1))), is("bogus", "is not a known field"));
        assert!(matches!(parse_registration(b"{nope", NOW, &[]), Err(ApiError::MalformedBody(_))));
    }

    #[test]
    fn one_line_fields_lose_bidi_and_zero_width_controls() {
        let b = with("title", json!("Refund \u{202E}0001$\u{202C} to \u{200B}ACME\u{FEFF}"));
        let mut b = b;
        b["form"] = json!([{"name": "r", "label": "\u{2067}Risk\u{2069}", "type": "choice",
                            "options": ["low\u{061C}", "hi\u{200E}gh"]}]);
        let a = parse_registration(b.to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!(a.title, "Refund 0001$ to ACME");
        assert_eq!(a.form[0].label, "Risk");
        assert_eq!(
            a.form[0].kind,
            crate::domain::form::FieldKind::Choice { options: vec!["low".into(), "high".into()] }
        );
        let chosen = with("approvalId", json!("wf-Q2hhbmdlIHJlcXVlc3QgMQ"));
        assert_eq!(
            parse_registration(chosen.to_string().as_bytes(), NOW, &[]).unwrap().id.unwrap().as_str(),
            "wf-Q2hhbmdlIHJlcXVlc3QgMQ"
        );
    }

    #[test]
    fn requesters_and_the_outcome_on_expiry() {
        let a = parse_registration(base().to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!((a.requested_by.len(), a.allow_self_approval, a.on_expiry), (0, false, OnExpiry::None));
        let mut b = with("requestedBy", json!([{"email": "Alice@Example.com"}]));
        b["onExpiry"] = json!("reject");
        let a = parse_registration(b.to_string().as_bytes(), NOW, &[]).unwrap();
        assert_eq!(a.requested_by, vec![Principal::Email("alice@example.com".into())]);
        assert_eq!(a.on_expiry, OnExpiry::Reject);
        // The only other approver is a group: still reachable under "all".
        b["quorum"] = json!("all");
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_err(), "alice's own email slot");
        b["allowSelfApproval"] = json!(true);
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_ok());
        assert_eq!(field_of(with("requestedBy", json!([{"group": "finance"}]))), "requestedBy[0]");
        assert_eq!(field_of(with("requestedBy", json!({"sub": "a"}))), "requestedBy");
        assert_eq!(field_of(with("requestedBy", json!([{"role": "a"}]))), "requestedBy[0]");
        assert_eq!(field_of(with("allowSelfApproval", json!("yes"))), "allowSelfApproval");
        assert_eq!(field_of(with("onExpiry", json!("escalate"))), "onExpiry");
    }

    #[test]
    fn n_quorum_may_exceed_listed_principals_only_with_groups() {
        let mut b = with("quorum", json!(2));
        b["approvers"] = json!([{"group": "finance"}]);
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_ok());
        b["approvers"] = json!([{"sub": "a"}]);
        assert!(parse_registration(b.to_string().as_bytes(), NOW, &[]).is_err());
    }
}
