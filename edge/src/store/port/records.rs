//! What the port's reads hand back besides the approval rows: out-of-office, the audit trail's events and
//! pages, the approval page's view, the cron's due work. Both backends build these.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::adapters::aws_target::AwsTarget;
use ringi_core::base::corrupt::CorruptValue;
use ringi_core::base::status::Verdict;
use ringi_core::base::time::format_rfc3339;
use ringi_core::domain::audit::{Actor, Event, EventKind};
use ringi_core::domain::audit_chain::Link;
use ringi_core::domain::schedule::{EntryKind, Escalation, ScheduleView};
use ringi_core::domain::vote::Progress;
use ringi_core::{ApiError, ApprovalId, TaskToken};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::rows::{Loaded, MailJob};
use crate::platform::random_bytes;

/// The caller's out-of-office row.
#[derive(Debug, Deserialize)]
pub struct OutOfOfficeRow {
    pub delegate: String,
    pub starts_at: f64,
    pub ends_at: f64,
    pub note: Option<String>,
}

/// Events the approval page shows at most (the export has them all).
pub(crate) const TIMELINE_MAX: i64 = 200;

/// A key drawn once per statement (the same on each retry of it), for events that may happen more than once.
pub(crate) fn random_key(id: &ApprovalId) -> String {
    format!("{}:r:{}", id.as_str(), URL_SAFE_NO_PAD.encode(random_bytes::<12>()))
}

pub(crate) const EVENT_COLUMNS: &str =
    "seq, approval_id, at, kind, actor, actor_display, detail_json, chain_n, prev_digest, digest";

#[derive(Debug, Deserialize)]
pub(crate) struct EventRow {
    pub(crate) seq: f64,
    approval_id: String,
    pub(crate) at: f64,
    kind: String,
    actor: String,
    actor_display: Option<String>,
    detail_json: String,
    /// The event's place in its approval's hash chain: absent or 0 while it is unchained.
    #[serde(default)]
    chain_n: Option<f64>,
    #[serde(default)]
    prev_digest: Option<String>,
    #[serde(default)]
    digest: Option<String>,
}

impl EventRow {
    fn event(self) -> Result<Event, CorruptValue> {
        let kind = EventKind::parse(&self.kind).ok_or_else(|| CorruptValue::new("approval_events.kind", &self.kind))?;
        let detail: Map<String, Value> = serde_json::from_str(&self.detail_json).map_err(|_| {
            CorruptValue::new("approval_events.detail_json", self.detail_json.chars().take(40).collect::<String>())
        })?;
        let chain = match (self.chain_n, self.prev_digest, self.digest) {
            (Some(n), Some(prev_digest), Some(digest)) if n >= 1.0 => Some(Link { n: n as i64, prev_digest, digest }),
            _ => None,
        };
        Ok(Event {
            chain,
            actor: Actor::from_stored(&self.actor, self.actor_display.as_deref())?,
            approval_id: self.approval_id,
            at: format_rfc3339(self.at as i64),
            kind,
            detail,
        })
    }
}

/// Typed events; a corrupt row is a 500 (logged), never silently dropped from an audit trail.
pub(crate) fn events(rows: Vec<EventRow>) -> Result<Vec<Event>, ApiError> {
    rows.into_iter()
        .map(|r| {
            let id = r.approval_id.clone();
            r.event().map_err(super::rows::corrupt(&id))
        })
        .collect()
}

/// The approval page's timeline: what happened, without the hash chain (the export's; an event the page shows
/// may be sealed a moment after the response).
pub(crate) fn page_events(rows: Vec<EventRow>) -> Result<Vec<Event>, ApiError> {
    Ok(events(rows)?.into_iter().map(|e| Event { chain: None, ..e }).collect())
}

/// One export page: the events and the position of the last one.
pub struct EventPage {
    pub events: Vec<Event>,
    /// `(at, seq)` of the last event, if the page is full (more may follow).
    pub last: Option<(i64, i64)>,
}

/// What the approval view's one round trip brings.
pub struct Viewed {
    /// The approval and its schedule as the page shows it.
    pub loaded: Option<(Loaded, ScheduleView)>,
    /// The approval's events, this view's first-view event included.
    pub events: Vec<Event>,
}

/// What the cron retries: request mails, and chat notifications (their channels still due).
#[derive(Default)]
pub struct Retries {
    pub mail: Vec<MailJob>,
    pub chat: Vec<MailJob>,
}

/// An approval whose chosen outcome is due. Holds the task token: never log it.
pub struct DueOutcome {
    pub id: ApprovalId,
    pub token: TaskToken,
    pub verdict: Verdict,
    pub expires_at: i64,
    /// Where the callback goes (`None`: this ringi's one account).
    pub target: Option<AwsTarget>,
    /// What ringi's receipt states besides its outcome: the quorum's progress when nobody completed it, the
    /// registration's digest.
    pub quorum: Progress,
    pub request_sha256: Option<String>,
}

/// How long a run holds the entries it took: longer than a run mailing a full batch takes.
pub const SCHEDULE_LEASE_MS: i64 = 10 * 60_000;

/// One due entry the cron took, with what it needs to act.
pub struct DueEntry {
    pub job: MailJob,
    pub seqs: Vec<i64>,
    pub kind: EntryKind,
    /// The approval's escalation (its `to` and `note`), if it has one.
    pub escalation: Option<Escalation>,
    /// The escalation principals were added already.
    pub escalated: bool,
    /// Verified emails of everyone who voted (reminders skip them).
    pub voted: Vec<String>,
}
