//! A chosen outcome when nobody decides (`onExpiry`). `none` leaves it to Step Functions: the task's own
//! `TimeoutSeconds` ends it (`States.Timeout`). With `reject` or `approve`, the approval has one deadline for
//! its approvers — shown and enforced — that ends `ON_EXPIRY_LEAD_SECONDS` before the task's (at most half of
//! the time there is: [`deadlines`]); ringi's cron answers the task after the approvers' deadline and before
//! the task's, through the same claim a person's decision takes: `SendTaskFailure` with error
//! [`EXPIRED_ERROR`], or `SendTaskSuccess` with `{"decision": "expired", …}`. The registration's deadline is the
//! task's: it should be the state's `TimeoutSeconds`.

use serde_json::{json, Map, Value};

use crate::base::by_name::serde_by_name;
use crate::base::corrupt::CorruptValue;
use crate::base::ids::ApprovalId;
use crate::base::principal::Identity;
use crate::base::status::Verdict;
use crate::base::time::format_rfc3339;
use crate::domain::callback::SfnCallback;

/// The `error` of ringi's SendTaskFailure when an approval with `onExpiry: "reject"` runs out.
pub const EXPIRED_ERROR: &str = "ringi.Expired";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnExpiry {
    /// Step Functions' own timeout ends the task.
    #[default]
    None,
    Reject,
    Approve,
}
serde_by_name!(OnExpiry, as_str, parse, "none, reject or approve");

impl OnExpiry {
    pub const ALL: [Self; 3] = [Self::None, Self::Reject, Self::Approve];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Reject => "reject",
            Self::Approve => "approve",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The stored `approvals.on_expiry`.
    pub fn from_stored(s: &str) -> Result<Self, CorruptValue> {
        Self::parse(s).ok_or_else(|| CorruptValue::new("approvals.on_expiry", s))
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

/// The two deadlines of an approval registered at `now` whose task ends at `task_deadline`: the approvers'
/// (shown and enforced for every person's act) and the task's. Without an outcome on expiry they are one; with
/// one, the approvers' ends `lead_ms` before the task's — but never takes more than half of the time there is,
/// so that a short task still leaves the approvers most of it.
pub fn deadlines(on_expiry: OnExpiry, now: i64, task_deadline: i64, lead_ms: i64) -> (i64, i64) {
    match on_expiry {
        OnExpiry::None => (task_deadline, task_deadline),
        _ => (task_deadline - lead_ms.min((task_deadline - now).max(0) / 2), task_deadline),
    }
}

/// Is it time for ringi to act: the approvers' deadline has passed, the task's is still ahead.
pub fn due(approvers_deadline: i64, task_deadline: i64, now: i64) -> bool {
    approvers_deadline <= now && now < task_deadline
}

/// What the workflow is told (`output`, or the failure's `cause`), with ringi's signed receipt of its own outcome
/// where it has a key ring (`crate::api::receipt`, the same claims as a person's: [`decider`] decided).
pub fn output(id: &ApprovalId, verdict: Verdict, expires_at: i64, decided_at: i64, receipt: Option<&str>) -> Value {
    let mut out = json!({
        "decision": "expired",
        "approvalId": id.as_str(),
        "onExpiry": verdict.as_str(),
        "expiresAt": format_rfc3339(expires_at),
        "decidedAt": format_rfc3339(decided_at),
    });
    if let Some(r) = receipt {
        out["receipt"] = Value::from(r);
    }
    out
}

/// ringi itself as the decider of its outcome on expiry, named by its issuer (its public origin): what the
/// receipt's `decidedBy.sub` says.
pub fn decider(issuer: &str) -> Identity {
    Identity {
        sub: issuer.to_owned(),
        email: None,
        groups: Vec::new(),
        username: None,
        scopes: Vec::new(),
        client_id: String::new(),
        sign_in: Default::default(),
    }
}

/// The callback ringi sends for an approval nobody decided.
pub fn callback(
    id: &ApprovalId,
    verdict: Verdict,
    expires_at: i64,
    decided_at: i64,
    receipt: Option<&str>,
) -> SfnCallback {
    let text = output(id, verdict, expires_at, decided_at, receipt).to_string();
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
    fn one_deadline_for_approvers_then_ringi_before_the_task_times_out() {
        assert_eq!(deadlines(OnExpiry::None, 0, 100_000, 600), (100_000, 100_000));
        assert_eq!(deadlines(OnExpiry::Reject, 0, 100_000, 600), (99_400, 100_000));
        // A short task: the approvers keep half of it.
        assert_eq!(deadlines(OnExpiry::Approve, 0, 1_000, 600), (500, 1_000));
        let (mine, task) = deadlines(OnExpiry::Reject, 0, 10_000, 5_000);
        assert!(!due(mine, task, 4_999), "the approvers still decide");
        assert!(due(mine, task, 5_000) && due(mine, task, 9_999));
        assert!(!due(mine, task, 10_000), "past the task's deadline Step Functions has timed it out");
    }

    #[test]
    fn callbacks_say_expired() {
        let id = ApprovalId::parse("abcdefghijklmnopqrstuv").unwrap();
        let SfnCallback::Success { output } = callback(&id, Verdict::Approve, 2_000, 1_000, None) else { panic!() };
        let v: Value = serde_json::from_str(&output).unwrap();
        assert_eq!((v["decision"].as_str(), v["onExpiry"].as_str()), (Some("expired"), Some("approve")));
        assert_eq!(v["approvalId"], "abcdefghijklmnopqrstuv");
        assert!(v.get("receipt").is_none());
        let SfnCallback::Failure { error, cause } = callback(&id, Verdict::Reject, 2_000, 1_000, Some("r.e.s")) else {
            panic!()
        };
        assert_eq!(error, "ringi.Expired");
        let cause: Value = serde_json::from_str(&cause).unwrap();
        assert_eq!((cause["onExpiry"].as_str(), cause["receipt"].as_str()), (Some("reject"), Some("r.e.s")));
        assert_eq!(Value::Object(event_detail(Verdict::Reject)), json!({"verdict": "reject", "onExpiry": true}));
    }
}
