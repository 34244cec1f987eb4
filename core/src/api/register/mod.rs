//! `POST /api/v1/approvals`: a registration body (a serde DTO) validated into a [`NewApproval`].

mod notify;
#[cfg(test)]
mod tests;

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
use crate::base::sign_in::SignInRequirement;
use crate::base::text::strip_invisible;
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
    /// `reminders` and `escalation` (core::domain::schedule), resolved to times.
    pub schedule: Schedule,
    /// The account and region the callback goes to (`AWS_TARGETS`); `None`: this ringi's one account.
    pub target: Option<AwsTarget>,
    /// The sign-in whoever decides must show (`requireSignIn`; `crate::domain::step_up`).
    pub require_sign_in: Option<SignInRequirement>,
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
    /// Checked item by item (core::domain::schedule), so that each error names `reminders[i]`.
    reminders: Option<Vec<Value>>,
    escalation: Option<Value>,
    /// Where the workflow runs, for callers that send no EventBridge envelope.
    aws: Option<AwsField>,
    /// Checked member by member (core::domain::step_up), so that each error names `requireSignIn.<member>`.
    require_sign_in: Option<Value>,
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
        let (notify, channels) = notify::notify(self.notify, &approvers, mail_allowed_domains, chat_channels)?;
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
            require_sign_in: self.require_sign_in.as_ref().map(crate::domain::step_up::parse).transpose()?,
        })
    }
}
