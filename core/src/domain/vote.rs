//! Votes on record (the `decisions` rows) and what they add up to: the one count of "approvals so far"
//! shown by the approval view, the inbox and the decision answer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::json::{FromJson, Members, Placeholder, ReadError};
use crate::base::principal::Principal;
use crate::base::status::Verdict;
use crate::base::time::format_rfc3339;
use crate::domain::quorum::CastApproval;
use crate::domain::quorum::Quorum;

/// One recorded decision of one approver.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedVote {
    pub sub: String,
    /// The listed principal the vote satisfied (an approval) or named (a rejection).
    pub principal: Principal,
    pub email: Option<String>,
    pub username: Option<String>,
    pub verdict: Verdict,
    pub comment: Option<String>,
    pub feedback: Option<Map<String, Value>>,
    /// Unix ms.
    pub at: i64,
}

/// Approvals so far: the listed principals an approval satisfied, each once (storage keeps at most one
/// approval per listed principal; counting principals keeps the number right whatever it was given). The
/// inbox query counts the same rows in SQL ([`APPROVALS_SO_FAR_SQL`]).
pub fn approvals_so_far(votes: &[RecordedVote]) -> u32 {
    let mut satisfied: Vec<&Principal> =
        votes.iter().filter(|v| v.verdict == Verdict::Approve).map(|v| &v.principal).collect();
    satisfied.sort();
    satisfied.dedup();
    satisfied.len() as u32
}

/// [`approvals_so_far`] as a correlated subquery over `decisions` for the approval aliased `a`.
pub const APPROVALS_SO_FAR_SQL: &str =
    "(SELECT COUNT(*) FROM decisions d WHERE d.approval_id = a.id AND d.decision = 'approve')";

/// Approvals so far against the number the quorum needs.
pub fn progress(quorum: Quorum, listed_principals: usize, votes: &[RecordedVote]) -> Progress {
    Progress { approvals: approvals_so_far(votes), required: quorum.required(listed_principals) }
}

/// The recorded approvals as the quorum rules take them.
pub fn cast_approvals(votes: &[RecordedVote]) -> Vec<CastApproval<'_>> {
    votes
        .iter()
        .filter(|v| v.verdict == Verdict::Approve)
        .map(|v| CastApproval { sub: &v.sub, email: v.email.as_deref(), principal: &v.principal })
        .collect()
}

impl RecordedVote {
    /// How the audit trail shows it: by email, else user name, else the principal it satisfied.
    pub fn audit_entry(&self) -> AuditEntry {
        AuditEntry {
            decision: self.verdict.as_str().to_owned(),
            by: self.email.clone().or_else(|| self.username.clone()).unwrap_or_else(|| self.principal.key()),
            comment: self.comment.clone(),
            feedback: self.feedback.clone(),
            at: format_rfc3339(self.at),
        }
    }
}

/// Approvals so far against the number the quorum needs (the approval view, the inbox, the decision answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub approvals: u32,
    pub required: u32,
}

/// One recorded decision, as shown in the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub decision: String,
    pub by: String,
    pub comment: Option<String>,
    pub feedback: Option<Map<String, Value>>,
    pub at: String,
}

impl FromJson for Progress {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self { approvals: m.get("approvals"), required: m.get("required") })
    }
}

impl Placeholder for Progress {
    fn placeholder() -> Self {
        Self { approvals: 0, required: 0 }
    }
}

impl FromJson for AuditEntry {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            decision: m.get("decision"),
            by: m.get("by"),
            comment: m.get("comment"),
            feedback: m.get("feedback"),
            at: m.get("at"),
        })
    }
}

impl AuditEntry {
    /// The typed `decision` (the wire field stays a string so that older clients keep reading it).
    pub fn verdict(&self) -> Option<Verdict> {
        Verdict::parse(&self.decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(sub: &str, verdict: Verdict) -> RecordedVote {
        RecordedVote {
            sub: sub.into(),
            principal: Principal::Sub(sub.into()),
            email: None,
            username: None,
            verdict,
            comment: None,
            feedback: None,
            at: 0,
        }
    }

    #[test]
    fn only_approvals_count() {
        let votes = [vote("a", Verdict::Approve), vote("b", Verdict::Reject), vote("c", Verdict::Approve)];
        assert_eq!(approvals_so_far(&votes), 2);
        assert_eq!(progress(Quorum::All, 3, &votes), Progress { approvals: 2, required: 3 });
        assert_eq!(cast_approvals(&votes).len(), 2);
        let entry = votes[1].audit_entry();
        assert_eq!((entry.decision.as_str(), entry.by.as_str()), ("reject", "sub:b"));
    }
}
