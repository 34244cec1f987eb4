//! Stored rows as D1 hands them over (strings and floats), and their typed reading. A value no domain
//! value maps to is a [`CorruptValue`]: logged and answered 500, never replaced by a default.

use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::adapters::chat::ChannelName;
use ringi_core::api::wire::InboxItem;
use ringi_core::base::context::ApprovalContext;
use ringi_core::base::corrupt::CorruptValue;
use ringi_core::base::locale::Locale;
use ringi_core::base::principal::{Identity, Principal};
use ringi_core::base::sign_in::SignInRequirement;
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::base::time::format_rfc3339;
use ringi_core::domain::approval::ApprovalState;
use ringi_core::domain::delegation::Seat;
use ringi_core::domain::form::FormField;
use ringi_core::domain::on_expiry::OnExpiry;
use ringi_core::domain::quorum::Quorum;
use ringi_core::domain::rules::Snapshot;
use ringi_core::domain::self_approval::Requesters;
use ringi_core::domain::vote::Progress;
use ringi_core::domain::vote::RecordedVote;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::platform::log;

/// Logs a corrupt row and turns it into a 500.
pub(crate) fn corrupt(id: &str) -> impl Fn(CorruptValue) -> ApiError + '_ {
    move |e| {
        log("error", "corrupt_row", json!({"approvalId": id, "error": e.to_string()}));
        ApiError::Internal
    }
}

fn parse_json<T: DeserializeOwned>(column: &'static str, s: &str) -> Result<T, CorruptValue> {
    serde_json::from_str(s).map_err(|_| CorruptValue::new(column, s.chars().take(40).collect::<String>()))
}

fn id(s: &str) -> Result<ApprovalId, CorruptValue> {
    ApprovalId::parse(s).map_err(|_| CorruptValue::new("approvals.id", s))
}

fn locale(s: Option<&str>) -> Result<Option<Locale>, CorruptValue> {
    s.map(|l| Locale::parse(l).ok_or_else(|| CorruptValue::new("approvals.locale", l))).transpose()
}

/// Columns of [`ApprovalRow`].
pub(crate) const APPROVAL_COLUMNS: &str = "id, task_token, status, confirmed, title, summary, details_json, \
     form_json, quorum, approver_count, context_json, locale, created_at, expires_at, claimed_until, decided_at, \
     attempt_sub, attempt_by, registered_by, requested_by_json, allow_self_approval, on_expiry, decided_on_expiry, \
     aws_account, aws_region, request_sha256, require_sign_in_json";

#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalRow {
    id: String,
    task_token: Option<String>,
    status: String,
    confirmed: f64,
    title: String,
    summary: String,
    details_json: String,
    form_json: String,
    quorum: String,
    approver_count: f64,
    context_json: String,
    locale: Option<String>,
    created_at: f64,
    expires_at: f64,
    claimed_until: Option<f64>,
    decided_at: Option<f64>,
    attempt_sub: Option<String>,
    attempt_by: Option<String>,
    registered_by: Option<String>,
    requested_by_json: String,
    allow_self_approval: f64,
    on_expiry: String,
    decided_on_expiry: f64,
    aws_account: Option<String>,
    aws_region: Option<String>,
    request_sha256: Option<String>,
    #[serde(default)]
    require_sign_in_json: Option<String>,
}

/// An approval as stored, typed.
#[derive(Debug)]
pub struct Approval {
    pub id: ApprovalId,
    /// `None` once the task is answered or closed.
    pub token: Option<TaskToken>,
    pub status: ApprovalStatus,
    /// The verdict of a decided approval.
    pub verdict: Option<Verdict>,
    pub title: String,
    pub summary: String,
    pub details: Map<String, Value>,
    pub form: Vec<FormField>,
    pub quorum: Quorum,
    pub approver_count: usize,
    pub context: Map<String, Value>,
    pub locale: Option<Locale>,
    pub created_at: i64,
    pub expires_at: i64,
    pub claimed_until: Option<i64>,
    pub decided_at: Option<i64>,
    pub attempt_sub: Option<String>,
    pub attempt_by: Option<String>,
    pub registered_by: Option<String>,
    /// Who asked (`requestedBy`): they may not decide unless `allow_self_approval`.
    pub requested_by: Vec<Principal>,
    pub allow_self_approval: bool,
    pub on_expiry: OnExpiry,
    /// The verdict was ringi's own on expiry.
    pub decided_on_expiry: bool,
    /// Where the callback goes (`None`: this ringi's one account).
    pub target: Option<AwsTarget>,
    /// Hex SHA-256 of the registration as received (what the decision receipt names).
    pub request_sha256: Option<String>,
    /// The sign-in whoever decides must show (`requireSignIn`), if any.
    pub require_sign_in: Option<SignInRequirement>,
}

/// The stored `requested_by_json`: principal keys.
pub(crate) fn requesters(json: &str) -> Result<Vec<Principal>, CorruptValue> {
    let keys: Vec<String> = parse_json("approvals.requested_by_json", json)?;
    keys.iter()
        .map(|k| Principal::from_key(k).ok_or_else(|| CorruptValue::new("approvals.requested_by_json", k)))
        .collect()
}

impl TryFrom<ApprovalRow> for Approval {
    type Error = CorruptValue;

    fn try_from(r: ApprovalRow) -> Result<Self, CorruptValue> {
        let (status, verdict) = ApprovalStatus::from_row(&r.status, r.confirmed)?;
        let token = r.task_token.as_deref().map(TaskToken::parse).transpose();
        Ok(Self {
            id: id(&r.id)?,
            // Never the token itself in an error: it is a secret.
            token: token.map_err(|_| CorruptValue::new("approvals.task_token", "<redacted>"))?,
            status,
            verdict,
            title: r.title,
            summary: r.summary,
            details: parse_json("approvals.details_json", &r.details_json)?,
            form: parse_json("approvals.form_json", &r.form_json)?,
            quorum: Quorum::from_stored(&r.quorum)?,
            approver_count: r.approver_count as usize,
            context: parse_json("approvals.context_json", &r.context_json)?,
            locale: locale(r.locale.as_deref())?,
            created_at: r.created_at as i64,
            expires_at: r.expires_at as i64,
            claimed_until: r.claimed_until.map(|t| t as i64),
            decided_at: r.decided_at.map(|t| t as i64),
            attempt_sub: r.attempt_sub,
            attempt_by: r.attempt_by,
            registered_by: r.registered_by,
            requested_by: requesters(&r.requested_by_json)?,
            allow_self_approval: r.allow_self_approval != 0.0,
            on_expiry: OnExpiry::from_stored(&r.on_expiry)?,
            decided_on_expiry: r.decided_on_expiry != 0.0,
            target: AwsTarget::from_stored(r.aws_account.as_deref(), r.aws_region.as_deref())?,
            request_sha256: r.request_sha256,
            require_sign_in: r
                .require_sign_in_json
                .as_deref()
                .map(|j| parse_json("approvals.require_sign_in_json", j))
                .transpose()?,
        })
    }
}

impl ApprovalRow {
    pub(crate) fn typed(self) -> Result<Approval, ApiError> {
        let id = self.id.clone();
        Approval::try_from(self).map_err(corrupt(&id))
    }
}

impl Approval {
    pub fn state(&self) -> ApprovalState {
        ApprovalState { status: self.status, expires_at: self.expires_at, claimed_until: self.claimed_until }
    }

    /// Approvals the quorum needs.
    pub fn required(&self) -> u32 {
        self.quorum.required(self.approver_count)
    }

    /// Why this approver may not decide (they asked for it), if so.
    pub fn refusal(&self, who: &Identity) -> Option<ApiError> {
        ringi_core::domain::self_approval::refusal(who, &self.requested_by, self.allow_self_approval)
    }

    /// Who asked for this approval (`requestedBy`, `allowSelfApproval`), as the rules read it.
    pub fn requesters(&self) -> Requesters<'_> {
        Requesters { principals: &self.requested_by, allow_self_approval: self.allow_self_approval }
    }
}

impl Loaded {
    /// The approval as `ringi_core::domain::rules` reads it.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            state: self.approval.state(),
            seats: &self.seats,
            votes: &self.votes,
            requesters: self.approval.requesters(),
            quorum: self.approval.quorum,
            sign_in: self.approval.require_sign_in.as_ref(),
        }
    }
}

/// An approval with its listed principals and recorded votes (one snapshot).
pub struct Loaded {
    pub approval: Approval,
    /// The listed principals (the seats at depth 0).
    pub principals: Vec<Principal>,
    /// Every row of its principals: the listed ones and their stand-ins (`ringi_core::domain::delegation`).
    pub seats: Vec<Seat>,
    pub votes: Vec<RecordedVote>,
}

/// Columns of [`PrincipalRow`].
pub(crate) const PRINCIPAL_COLUMNS: &str = "kind, value, slot, depth, delegated_to, delegated_by, note, routed";

#[derive(Debug, Deserialize)]
pub(crate) struct PrincipalRow {
    kind: String,
    value: String,
    #[serde(default)]
    slot: Option<String>,
    #[serde(default)]
    depth: f64,
    #[serde(default)]
    delegated_to: Option<String>,
    #[serde(default)]
    delegated_by: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    routed: f64,
}

impl PrincipalRow {
    pub(crate) fn typed(&self) -> Result<Seat, CorruptValue> {
        let principal = Principal::from_parts(&self.kind, &self.value)
            .ok_or_else(|| CorruptValue::new("approval_principals.kind", &self.kind))?;
        let key = |column: &'static str, k: &Option<String>| {
            k.as_deref().map(|k| Principal::from_key(k).ok_or_else(|| CorruptValue::new(column, k))).transpose()
        };
        Ok(Seat {
            slot: key("approval_principals.slot", &self.slot)?.unwrap_or_else(|| principal.clone()),
            principal,
            depth: self.depth as u32,
            delegated_to: key("approval_principals.delegated_to", &self.delegated_to)?,
            delegated_by: self.delegated_by.clone(),
            note: self.note.clone(),
            routed: self.routed == 1.0,
        })
    }
}

/// Columns of [`DecisionRow`].
pub(crate) const DECISION_COLUMNS: &str = "sub, principal, email, username, decision, comment, feedback_json, at";

#[derive(Debug, Deserialize)]
pub(crate) struct DecisionRow {
    sub: String,
    principal: String,
    email: Option<String>,
    username: Option<String>,
    decision: String,
    comment: Option<String>,
    feedback_json: Option<String>,
    at: f64,
}

impl TryFrom<DecisionRow> for RecordedVote {
    type Error = CorruptValue;

    fn try_from(r: DecisionRow) -> Result<Self, CorruptValue> {
        Ok(Self {
            principal: Principal::from_key(&r.principal)
                .ok_or_else(|| CorruptValue::new("decisions.principal", &r.principal))?,
            verdict: Verdict::from_stored("decisions.decision", &r.decision)?,
            feedback: r.feedback_json.as_deref().map(|f| parse_json("decisions.feedback_json", f)).transpose()?,
            sub: r.sub,
            email: r.email,
            username: r.username,
            comment: r.comment,
            at: r.at as i64,
        })
    }
}

pub(crate) fn votes(id: &ApprovalId, rows: Vec<DecisionRow>) -> Result<Vec<RecordedVote>, ApiError> {
    rows.into_iter().map(RecordedVote::try_from).collect::<Result<_, _>>().map_err(corrupt(id.as_str()))
}

/// The callback attempt on record after a won claim (the earliest one not known to have failed).
#[derive(Debug, Deserialize)]
pub(crate) struct AttemptRow {
    attempt_id: Option<String>,
    attempt_verdict: Option<String>,
    attempt_sub: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: Option<String>,
    pub verdict: Option<Verdict>,
    pub sub: Option<String>,
}

impl Attempt {
    /// Step Functions said "task closed" to the claim `claim_id`: did an attempt that may have been delivered
    /// close it (an earlier claim's on record, or a try of this one that may have got through)? Then its
    /// verdict stands, unconfirmed; otherwise nothing of ours closed the task: it expired.
    pub fn may_have_closed_the_task(&self, claim_id: &str, maybe_delivered: bool) -> bool {
        self.id.as_deref() != Some(claim_id) || maybe_delivered
    }

    /// The attempt on record is ringi's own (the outcome on expiry): its `attempt_sub` is NULL, which a
    /// person's never is (a verified token always names a `sub`).
    pub fn is_systems(&self) -> bool {
        self.id.is_some() && self.sub.is_none()
    }
}

impl TryFrom<AttemptRow> for Attempt {
    type Error = CorruptValue;

    fn try_from(r: AttemptRow) -> Result<Self, CorruptValue> {
        let verdict = r.attempt_verdict.as_deref().map(|v| Verdict::from_stored("approvals.attempt_verdict", v));
        Ok(Self { id: r.attempt_id, verdict: verdict.transpose()?, sub: r.attempt_sub })
    }
}

/// A row of the inbox query (the approval plus its approvals so far).
#[derive(Debug, Deserialize)]
pub(crate) struct InboxRow {
    id: String,
    status: String,
    confirmed: f64,
    title: String,
    summary: String,
    quorum: String,
    approver_count: f64,
    context_json: String,
    created_at: f64,
    expires_at: f64,
    decided_at: Option<f64>,
    sort_at: f64,
    approvals: f64,
    requested_by_json: String,
    allow_self_approval: f64,
    decided_on_expiry: f64,
    escalated_at: Option<f64>,
    #[serde(default)]
    delegated_to: Option<String>,
}

/// One inbox item and its place in the order (for the cursor).
pub struct InboxEntry {
    pub item: InboxItem,
    pub sort_at: i64,
}

impl InboxRow {
    /// Characters of the summary an inbox item carries.
    const SUMMARY_CHARS: usize = 280;

    pub(crate) fn typed(self, now: i64, who: &Identity) -> Result<InboxEntry, ApiError> {
        let id = self.id.clone();
        self.entry(now, who).map_err(corrupt(&id))
    }

    fn entry(self, now: i64, who: &Identity) -> Result<InboxEntry, CorruptValue> {
        let requested_by = requesters(&self.requested_by_json)?;
        let refusal = ringi_core::domain::self_approval::refusal(who, &requested_by, self.allow_self_approval != 0.0);
        let (status, verdict) = ApprovalStatus::from_row(&self.status, self.confirmed)?;
        let required = Quorum::from_stored(&self.quorum)?.required(self.approver_count as usize);
        let item = InboxItem {
            id: self.id,
            status: status.effective(self.expires_at as i64, now),
            verdict,
            title: self.title,
            summary: self.summary.chars().take(Self::SUMMARY_CHARS).collect(),
            context: parse_json("approvals.context_json", &self.context_json)?,
            progress: Progress { approvals: self.approvals as u32, required },
            created_at: format_rfc3339(self.created_at as i64),
            expires_at: format_rfc3339(self.expires_at as i64),
            decided_at: self.decided_at.map(|t| format_rfc3339(t as i64)),
            cannot_decide: refusal.map(|e| e.error_code()),
            decided_on_expiry: self.decided_on_expiry != 0.0,
            escalated: self.escalated_at.is_some(),
            delegated_to: match self.delegated_to.as_deref() {
                None | Some("") => None,
                Some(k) => Some(
                    Principal::from_key(k).ok_or_else(|| CorruptValue::new("approval_principals.delegated_to", k))?,
                ),
            },
        };
        Ok(InboxEntry { item, sort_at: self.sort_at as i64 })
    }
}

/// Columns of [`MailRow`].
pub(crate) const MAIL_COLUMNS: &str = "id, title, summary, notify_json, context_json, locale, expires_at, \
     registered_by, requested_by_json, on_expiry, chat_due_json";

#[derive(Debug, Deserialize)]
pub(crate) struct MailRow {
    id: String,
    title: String,
    summary: String,
    notify_json: String,
    context_json: String,
    locale: Option<String>,
    expires_at: f64,
    registered_by: Option<String>,
    requested_by_json: String,
    on_expiry: String,
    chat_due_json: String,
}

/// What the mailer needs of an approval.
#[derive(Debug, Clone)]
pub struct MailJob {
    pub id: ApprovalId,
    pub title: String,
    pub summary: String,
    pub notify: Vec<String>,
    pub context: ApprovalContext,
    pub locale: Locale,
    pub expires_at: i64,
    pub registered_by: Option<String>,
    /// `requestedBy`, shown as "Requested by" when `context` names nobody.
    pub requested_by: Vec<Principal>,
    pub on_expiry: OnExpiry,
    /// The chat channels not posted to yet (core::chat): the same message goes there.
    pub chat_due: Vec<ChannelName>,
}

/// The stored `chat_due_json`: channel names.
fn channels(json: &str) -> Result<Vec<ChannelName>, CorruptValue> {
    let names: Vec<String> = parse_json("approvals.chat_due_json", json)?;
    names.iter().map(|n| ChannelName::parse(n).ok_or_else(|| CorruptValue::new("approvals.chat_due_json", n))).collect()
}

impl TryFrom<MailRow> for MailJob {
    type Error = CorruptValue;

    fn try_from(r: MailRow) -> Result<Self, CorruptValue> {
        let context: Map<String, Value> = parse_json("approvals.context_json", &r.context_json)?;
        Ok(Self {
            id: id(&r.id)?,
            notify: parse_json("approvals.notify_json", &r.notify_json)?,
            context: ApprovalContext::from_map(&context),
            locale: locale(r.locale.as_deref())?.unwrap_or_default(),
            title: r.title,
            summary: r.summary,
            expires_at: r.expires_at as i64,
            registered_by: r.registered_by,
            requested_by: requesters(&r.requested_by_json)?,
            on_expiry: OnExpiry::from_stored(&r.on_expiry)?,
            chat_due: channels(&r.chat_due_json)?,
        })
    }
}

/// Typed mail rows; a corrupt one is logged and skipped, so that it does not stop the others' mail.
pub(crate) fn mail_jobs(rows: Vec<MailRow>) -> Vec<MailJob> {
    rows.into_iter()
        .filter_map(|r| {
            let id = r.id.clone();
            MailJob::try_from(r).map_err(corrupt(&id)).ok()
        })
        .collect()
}

pub(crate) fn mail_job(row: MailRow) -> Result<MailJob, ApiError> {
    let id = row.id.clone();
    MailJob::try_from(row).map_err(corrupt(&id))
}
