//! A chosen outcome when nobody decides (`onExpiry`). `none` leaves it to Step Functions: the task's own
//! `TimeoutSeconds` ends it (`States.Timeout`). With `reject` or `approve`, ringi's cron answers the task
//! itself shortly before the approval's `expiresAt` — within `ON_EXPIRY_LEAD_SECONDS` of it — through the
//! same claim a person's decision takes: `SendTaskFailure` with error [`EXPIRED_ERROR`], or
//! `SendTaskSuccess` with `{"decision": "expired", …}`. `expiresAt` is ringi's deadline: it should be the
//! state's `TimeoutSeconds`, so that ringi acts before Step Functions times the task out.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::approval::Verdict;
use crate::error::CorruptValue;
use crate::ids::ApprovalId;
use crate::sfn::SfnCallback;
use crate::time::format_rfc3339;

/// The `error` of ringi's SendTaskFailure when an approval with `onExpiry: "reject"` runs out.
pub const EXPIRED_ERROR: &str = "ringi.Expired";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpiry {
    /// Step Functions' own timeout ends the task.
    #[default]
    None,
    Reject,
    Approve,
}

impl OnExpiry {
    pub const ALL: [Self; 3] = [Self::None, Self::Reject, Self::Approve];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Reject => "reject",
            Self::Approve => "approve",
        }
    }

    /// The stored `approvals.on_expiry`.
    pub fn from_stored(s: &str) -> Result<Self, CorruptValue> {
        Self::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| CorruptValue::new("approvals.on_expiry", s))
    }

    /// The verdict ringi delivers itself, if any.
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            Self::None => None,
            Self::Reject => Some(Verdict::Reject),
            Self::Approve => Some(Verdict::Approve),
        }
    }
}

/// Is it time for ringi to act: the deadline is still ahead, and at most `lead_ms` away.
pub fn due(expires_at: i64, now: i64, lead_ms: i64) -> bool {
    expires_at > now && expires_at - now <= lead_ms
}

/// What the workflow is told (`output`, or the failure's `cause`).
pub fn output(id: &ApprovalId, verdict: Verdict, expires_at: i64, decided_at: i64) -> Value {
    json!({
        "decision": "expired",
        "approvalId": id.as_str(),
        "onExpiry": verdict.as_str(),
        "expiresAt": format_rfc3339(expires_at),
        "decidedAt": format_rfc3339(decided_at),
    })
}

/// The callback ringi sends for an approval nobody decided.
pub fn callback(id: &ApprovalId, verdict: Verdict, expires_at: i64, decided_at: i64) -> SfnCallback {
    let text = output(id, verdict, expires_at, decided_at).to_string();
    match verdict {
        Verdict::Approve => SfnCallback::Success { output: text },
        Verdict::Reject => SfnCallback::Failure { error: EXPIRED_ERROR.to_owned(), cause: text },
    }
}

/// The audit event's detail of the system's outcome.
pub fn event_detail(verdict: Verdict) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("verdict".into(), Value::from(verdict.as_str()));
    m.insert("onExpiry".into(), Value::Bool(true));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_and_stored_forms() {
        for o in OnExpiry::ALL {
            assert_eq!(OnExpiry::from_stored(o.as_str()), Ok(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert!(OnExpiry::from_stored("maybe").is_err());
        assert_eq!(OnExpiry::default(), OnExpiry::None);
        assert_eq!((OnExpiry::None.verdict(), OnExpiry::Reject.verdict()), (None, Some(Verdict::Reject)));
    }

    #[test]
    fn due_inside_the_lead_and_before_the_deadline() {
        assert!(!due(10_000, 0, 5_000), "too early");
        assert!(due(10_000, 5_000, 5_000));
        assert!(due(10_000, 9_999, 5_000));
        assert!(!due(10_000, 10_000, 5_000), "past the deadline Step Functions has timed the task out");
    }

    #[test]
    fn callbacks_say_expired() {
        let id = ApprovalId::parse("abcdefghijklmnopqrstuv").unwrap();
        let SfnCallback::Success { output } = callback(&id, Verdict::Approve, 2_000, 1_000) else { panic!() };
        let v: Value = serde_json::from_str(&output).unwrap();
        assert_eq!((v["decision"].as_str(), v["onExpiry"].as_str()), (Some("expired"), Some("approve")));
        assert_eq!(v["approvalId"], "abcdefghijklmnopqrstuv");
        let SfnCallback::Failure { error, cause } = callback(&id, Verdict::Reject, 2_000, 1_000) else { panic!() };
        assert_eq!(error, "ringi.Expired");
        assert_eq!(serde_json::from_str::<Value>(&cause).unwrap()["onExpiry"], "reject");
        assert_eq!(Value::Object(event_detail(Verdict::Reject)), json!({"verdict": "reject", "onExpiry": true}));
    }
}
