//! The append-only event log of an approval: what happened, when, and who did it. Every change an
//! approval goes through is one [`Event`]; the approval page shows them as a timeline and operators
//! export them (`GET /api/v1/audit`). Events outlive the approval's token and row (their own retention).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::corrupt::CorruptValue;

/// What happened. Stored as its snake_case name (`approval_events.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Registered by an authenticated machine credential.
    Registered,
    /// The notification mail was accepted by SES (or given up on: `detail.failed`).
    Mailed,
    /// A reminder was mailed.
    Reminded,
    /// An approver opened the approval for the first time (recorded once per approver).
    Viewed,
    /// An approver voted without deciding the approval (quorum not reached yet).
    Voted,
    /// The decision was sent to Step Functions and confirmed (or the task turned out closed).
    Decided,
    /// The callback to Step Functions failed; the approval stays decidable (`detail.error`).
    CallbackFailed,
    /// An approver handed their slot to another principal.
    Delegated,
    /// An operator changed the approvers.
    Reassigned,
    /// Out-of-office routing sent a new approval to a stand-in.
    Routed,
    /// The escalation principals were added.
    Escalated,
    /// Nobody decided in time.
    Expired,
    /// The token and the approval's row were purged after retention.
    Purged,
    /// A chat channel was posted to (`detail.channel`: its configured name, never its URL; `delivered`
    /// false with `error` for a try that failed and is retried).
    Notified,
    /// A push message went to a device (`detail.device`: 16 hex digits of the endpoint's SHA-256, never the
    /// endpoint; `mail`: request / reminder / escalation / handover; `delivered`; `error` for a failed try, retried;
    /// `dropped` when the push service said the subscription is gone and ringi removed it).
    Pushed,
}

impl EventKind {
    pub const ALL: [Self; 15] = [
        Self::Registered,
        Self::Mailed,
        Self::Reminded,
        Self::Viewed,
        Self::Voted,
        Self::Decided,
        Self::CallbackFailed,
        Self::Delegated,
        Self::Reassigned,
        Self::Routed,
        Self::Escalated,
        Self::Expired,
        Self::Purged,
        Self::Notified,
        Self::Pushed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Mailed => "mailed",
            Self::Reminded => "reminded",
            Self::Viewed => "viewed",
            Self::Voted => "voted",
            Self::Decided => "decided",
            Self::CallbackFailed => "callback_failed",
            Self::Delegated => "delegated",
            Self::Reassigned => "reassigned",
            Self::Routed => "routed",
            Self::Escalated => "escalated",
            Self::Expired => "expired",
            Self::Purged => "purged",
            Self::Notified => "notified",
            Self::Pushed => "pushed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Who caused an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Read through the flat `ActorWire`: a derived internally tagged enum buffers each actor into serde's generic
// content first, a cost every reader of a timeline carries (the SPA's download most).
#[serde(tag = "type", rename_all = "snake_case", try_from = "ActorWire")]
pub enum Actor {
    /// ringi itself (the cron, a callback result).
    System,
    /// The authenticated registrant (`api-key:…` / `client:…`).
    Registrant { id: String },
    /// A signed-in person, from verified claims only: `sub` and what the UI shows (email or user name).
    User { sub: String, display: String },
}

/// An actor as written: the members of every type side by side, the type's own required by `TryFrom`.
#[derive(Deserialize)]
struct ActorWire {
    #[serde(rename = "type")]
    kind: ActorTag,
    id: Option<String>,
    sub: Option<String>,
    display: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ActorTag {
    System,
    Registrant,
    User,
}

impl TryFrom<ActorWire> for Actor {
    type Error = &'static str;

    fn try_from(w: ActorWire) -> Result<Self, Self::Error> {
        Ok(match w.kind {
            ActorTag::System => Self::System,
            ActorTag::Registrant => Self::Registrant { id: w.id.ok_or("missing field `id`")? },
            ActorTag::User => Self::User {
                sub: w.sub.ok_or("missing field `sub`")?,
                display: w.display.ok_or("missing field `display`")?,
            },
        })
    }
}

impl Actor {
    /// Storage form (`approval_events.actor`): `system`, `registrant:<id>`, `user:<sub>`; the display
    /// name is kept in its own column.
    pub fn key(&self) -> String {
        match self {
            Self::System => "system".to_owned(),
            Self::Registrant { id } => format!("registrant:{id}"),
            Self::User { sub, .. } => format!("user:{sub}"),
        }
    }

    pub fn display(&self) -> Option<&str> {
        match self {
            Self::User { display, .. } => Some(display),
            _ => None,
        }
    }

    /// Reads [`Actor::key`] and the display column back.
    pub fn from_stored(key: &str, display: Option<&str>) -> Result<Self, CorruptValue> {
        let corrupt = || CorruptValue::new("approval_events.actor", key);
        if key == "system" {
            return Ok(Self::System);
        }
        match key.split_once(':') {
            Some(("registrant", id)) if !id.is_empty() => Ok(Self::Registrant { id: id.to_owned() }),
            Some(("user", sub)) if !sub.is_empty() => {
                Ok(Self::User { sub: sub.to_owned(), display: display.unwrap_or(sub).to_owned() })
            }
            _ => Err(corrupt()),
        }
    }
}

impl Actor {
    /// The signed-in caller, named as the UI shows people elsewhere: verified email, else user name, else sub.
    pub fn user(who: &crate::base::principal::Identity) -> Self {
        let display = who.email.clone().or_else(|| who.username.clone()).unwrap_or_else(|| who.sub.clone());
        Self::User { sub: who.sub.clone(), display }
    }
}

/// One event as the API shows it (the approval page's timeline, the audit export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub approval_id: String,
    /// RFC 3339, UTC.
    pub at: String,
    pub kind: EventKind,
    pub actor: Actor,
    /// Kind-specific facts (never a token or a secret): e.g. `{"verdict":"approve"}`, `{"to":{"email":…}}`.
    #[serde(default)]
    pub detail: Map<String, Value>,
    /// Its place in the approval's hash chain; absent for an event written before the chain
    /// began, or not sealed yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Link>,
}

/// An event's place in its approval's hash chain (`audit_chain`), as the export shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// Position in the approval's chain, from 1.
    pub n: i64,
    /// The digest of event `n - 1` ([`genesis`] for the first).
    pub prev_digest: String,
    /// This event's digest ([`digest`]).
    pub digest: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_stored_names() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), Value::String(k.as_str().to_owned()));
        }
        assert_eq!(EventKind::parse("approve"), None);
    }

    #[test]
    fn actors_round_trip_through_storage() {
        let user = Actor::User { sub: "u-1".into(), display: "a@example.com".into() };
        for a in [Actor::System, Actor::Registrant { id: "api-key:ab12".into() }, user] {
            assert_eq!(Actor::from_stored(&a.key(), a.display()).unwrap(), a);
        }
        assert!(Actor::from_stored("user:", None).is_err());
        assert!(Actor::from_stored("robot:x", None).is_err());
    }

    #[test]
    fn actors_round_trip_through_json_and_each_type_needs_its_own_members() {
        let user = Actor::User { sub: "u-1".into(), display: "a@example.com".into() };
        for a in [Actor::System, Actor::Registrant { id: "api-key:ab12".into() }, user] {
            assert_eq!(serde_json::from_value::<Actor>(serde_json::to_value(&a).unwrap()).unwrap(), a);
        }
        assert_eq!(serde_json::to_value(Actor::System).unwrap(), serde_json::json!({"type": "system"}));
        let read = |v: Value| serde_json::from_value::<Actor>(v).map_err(|e| e.to_string());
        assert_eq!(read(serde_json::json!({"type": "system", "sub": "x"})).unwrap(), Actor::System);
        assert_eq!(read(serde_json::json!({"type": "user", "sub": "u-1"})).unwrap_err(), "missing field `display`");
        assert!(read(serde_json::json!({"type": "robot"})).unwrap_err().starts_with("unknown variant `robot`"));
    }
}
