//! A decision request, its limits, and the Step Functions callback it turns into (design.md §6).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::base::body::{from_object, json_value};
use crate::base::error::ApiError;
use crate::base::ids::ApprovalId;
use crate::base::principal::Identity;
use crate::base::status::Verdict;
use crate::base::time::format_rfc3339;
use crate::domain::callback::SfnCallback;
use crate::domain::form::DecisionField;
use crate::domain::form::{validate_feedback, FormField};
use crate::domain::vote::RecordedVote;

pub const COMMENT_MAX_CHARS: usize = 4_000;
/// SendTaskSuccess `output`: at most 262,144 bytes of UTF-8.
pub const OUTPUT_MAX_BYTES: usize = 262_144;
/// SendTaskFailure `cause`: at most 32,768 characters.
pub const CAUSE_MAX_CHARS: usize = 32_768;
/// Request bodies above this are refused before parsing.
pub const BODY_MAX_BYTES: usize = 512 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Map<String, Value>>,
}

impl DecisionRequest {
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        if body.len() > BODY_MAX_BYTES {
            return Err(ApiError::PayloadTooLarge(format!("request body exceeds {BODY_MAX_BYTES} bytes")));
        }
        from_object::<DecisionBody>(json_value(body)?, |path, _| match path {
            "comment" => ApiError::invalid(path, "must be a string"),
            "feedback" => ApiError::invalid(path, "must be a JSON object"),
            _ => ApiError::invalid("decision", VERDICT_RULE),
        })?
        .try_into()
    }

    /// Checks the feedback against the approval's form.
    pub fn validate_against(&self, form: &[FormField]) -> Result<(), ApiError> {
        let empty = Map::new();
        validate_feedback(form, self.feedback.as_ref().unwrap_or(&empty))
    }
}

const VERDICT_RULE: &str = "must be \"approve\" or \"reject\"";

/// The decision body as sent (`null` = absent); [`DecisionRequest`] is the checked value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    decision: Option<Verdict>,
    comment: Option<String>,
    feedback: Option<Map<String, Value>>,
}

impl TryFrom<DecisionBody> for DecisionRequest {
    type Error = ApiError;

    fn try_from(b: DecisionBody) -> Result<Self, ApiError> {
        let decision = b.decision.ok_or_else(|| ApiError::invalid("decision", VERDICT_RULE))?;
        if b.comment.as_deref().is_some_and(|c| c.chars().count() > COMMENT_MAX_CHARS) {
            let path = DecisionField::Comment.path();
            return Err(ApiError::invalid(path, format!("must be at most {COMMENT_MAX_CHARS} characters")));
        }
        Ok(Self { decision, comment: b.comment, feedback: b.feedback })
    }
}

/// An earlier approval as the workflow sees it in the decision's `approvals`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorApproval {
    pub sub: String,
    pub email: Option<String>,
    pub username: Option<String>,
    pub comment: Option<String>,
    pub at: String,
}

impl PriorApproval {
    /// The approvals of other approvers that counted before `decider`'s verdict.
    pub fn of_others(votes: &[RecordedVote], decider: &str) -> Vec<Self> {
        votes.iter().filter(|v| v.sub != decider && v.verdict == Verdict::Approve).map(Self::from).collect()
    }

    fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl From<&RecordedVote> for PriorApproval {
    fn from(v: &RecordedVote) -> Self {
        Self {
            sub: v.sub.clone(),
            email: v.email.clone(),
            username: v.username.clone(),
            comment: v.comment.clone(),
            at: format_rfc3339(v.at),
        }
    }
}

/// Everything the workflow learns about the decision.
#[derive(Debug, Clone)]
pub struct DecisionRecord<'a> {
    pub approval_id: &'a ApprovalId,
    pub verdict: Verdict,
    pub decided_by: &'a Identity,
    pub comment: Option<&'a str>,
    pub feedback: Option<&'a Map<String, Value>>,
    pub decided_at_ms: i64,
    /// Earlier approvals that counted towards the quorum (empty for `any`).
    pub prior_approvals: &'a [PriorApproval],
    /// The listed principal a delegate decided for (their slot was handed to them).
    pub on_behalf_of: Option<&'a crate::base::principal::Principal>,
    /// The signed receipt of this decision (`crate::api::receipt`), where ringi has a key ring.
    pub receipt: Option<&'a str>,
    /// ringi decided itself when the approvers' deadline passed (`onExpiry`; `DecisionRecord::on_expiry`): its
    /// receipt says `"reason": "expiry"`.
    pub on_expiry: bool,
}

impl DecisionRecord<'_> {
    /// The decision object handed to the workflow (SendTaskSuccess `output` / SendTaskFailure `cause`).
    pub fn output(&self) -> Value {
        let by = self.decider();
        let mut out = json!({
            "decision": self.verdict.final_status().as_str(),
            "approvalId": self.approval_id.as_str(),
            "comment": self.comment,
            "feedback": self.feedback,
            "decidedAt": format_rfc3339(self.decided_at_ms),
        });
        let key = match self.verdict {
            Verdict::Approve => "approvedBy",
            Verdict::Reject => "rejectedBy",
        };
        out[key] = by;
        if let Some(p) = self.on_behalf_of {
            out["onBehalfOf"] = crate::domain::delegation::principal_value(p);
        }
        if !self.prior_approvals.is_empty() {
            out["approvals"] = self.prior_approvals.iter().map(PriorApproval::to_value).collect();
        }
        if let Some(r) = self.receipt {
            out["receipt"] = Value::String(r.to_owned());
        }
        out
    }

    /// Who decided, as the workflow and the receipt name them.
    pub fn decider(&self) -> Value {
        json!({"sub": self.decided_by.sub, "email": self.decided_by.email, "username": self.decided_by.username})
    }

    /// The callback, with Step Functions' size limits checked before anything is claimed (413). A rejection's
    /// `cause` is kept within [`CAUSE_MAX_CHARS`] by shortening the earlier approvers' comments (and, if need
    /// be, listing fewer of them), marked `"truncated": true`: what others wrote never blocks a rejection.
    /// Only the rejecter's own comment and feedback can still make it too large.
    pub fn callback(&self) -> Result<SfnCallback, ApiError> {
        let text = self.output().to_string();
        match self.verdict {
            Verdict::Approve if text.len() > OUTPUT_MAX_BYTES => Err(ApiError::PayloadTooLarge(format!(
                "the decision output would be {} bytes; Step Functions accepts at most {OUTPUT_MAX_BYTES}",
                text.len()
            ))),
            Verdict::Approve => Ok(SfnCallback::Success { output: text }),
            Verdict::Reject => {
                let cause = if text.chars().count() <= CAUSE_MAX_CHARS { Some(text) } else { self.shortened_cause() };
                cause.map(|cause| SfnCallback::Failure { error: "Rejected".into(), cause }).ok_or_else(|| {
                    ApiError::PayloadTooLarge(format!(
                        "the rejection's comment and feedback leave no room in the {CAUSE_MAX_CHARS} characters \
                         Step Functions accepts as a cause; shorten them"
                    ))
                })
            }
        }
    }

    /// The rejection cause with earlier approvals shortened until it fits; `None` if even without them the
    /// rejecter's own comment and feedback are too long.
    fn shortened_cause(&self) -> Option<String> {
        let render = |comment_chars: usize, kept: usize| -> Option<String> {
            let mut out = self.output();
            let approvals: Vec<Value> = self.prior_approvals[..kept]
                .iter()
                .map(|a| {
                    let mut a = a.to_value();
                    if let Some(Value::String(c)) = a.get("comment") {
                        if c.chars().count() > comment_chars {
                            let cut: String = c.chars().take(comment_chars).collect();
                            a["comment"] = if cut.is_empty() { Value::Null } else { Value::String(cut + "…") };
                            a["commentTruncated"] = Value::Bool(true);
                        }
                    }
                    a
                })
                .collect();
            if approvals.is_empty() {
                out.as_object_mut()?.remove("approvals");
            } else {
                out["approvals"] = Value::Array(approvals);
            }
            if kept < self.prior_approvals.len() {
                out["approvalsOmitted"] = json!(self.prior_approvals.len() - kept);
            }
            out["truncated"] = Value::Bool(true);
            let text = out.to_string();
            (text.chars().count() <= CAUSE_MAX_CHARS).then_some(text)
        };
        let all = self.prior_approvals.len();
        // The longest per-comment length that fits (fitting is monotone in it): binary search.
        if render(0, all).is_some() {
            let (mut lo, mut hi) = (0, COMMENT_MAX_CHARS);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if render(mid, all).is_some() {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            return render(lo, all);
        }
        // Even without comments the list is too long: keep as many earlier approvals as fit.
        render(0, 0)?;
        let (mut lo, mut hi) = (0, all - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if render(0, mid).is_some() {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        render(0, lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who() -> Identity {
        Identity {
            sub: "s1".into(),
            email: Some("a@example.com".into()),
            groups: vec![],
            username: Some("alice".into()),
            scopes: vec![],
            client_id: "c".into(),
            sign_in: Default::default(),
        }
    }

    #[test]
    fn error_fields_name_the_comment_or_a_feedback_answer() {
        assert_eq!(DecisionField::parse("comment"), Some(DecisionField::Comment));
        assert_eq!(DecisionField::parse("feedback.risk"), Some(DecisionField::Feedback("risk")));
        assert_eq!(DecisionField::parse("approvers[0]"), None);
        for f in [DecisionField::Comment, DecisionField::Feedback("risk")] {
            assert_eq!(DecisionField::parse(&f.path()), Some(f));
        }
        let long = format!(r#"{{"decision":"reject","comment":"{}"}}"#, "x".repeat(COMMENT_MAX_CHARS + 1));
        let ApiError::Invalid { field, .. } = DecisionRequest::parse(long.as_bytes()).unwrap_err() else { panic!() };
        assert_eq!(DecisionField::parse(&field), Some(DecisionField::Comment));
    }

    #[test]
    fn parse_validates_shape() {
        let ok = DecisionRequest::parse(br#"{"decision":"approve","comment":"ok","feedback":{"a":1}}"#).unwrap();
        assert_eq!(ok.decision, Verdict::Approve);
        assert!(matches!(DecisionRequest::parse(b"{").unwrap_err(), ApiError::MalformedBody(_)));
        assert_eq!(DecisionRequest::parse(br#"{"decision":"maybe"}"#).unwrap_err().code(), "invalid_request");
        assert_eq!(DecisionRequest::parse(br#"[]"#).unwrap_err().code(), "invalid_request");
        let e = DecisionRequest::parse(br#"{"decision":"reject","feedback":[1]}"#).unwrap_err();
        assert_eq!(e, ApiError::invalid("feedback", "must be a JSON object"));
        let long = format!(r#"{{"decision":"reject","comment":"{}"}}"#, "x".repeat(COMMENT_MAX_CHARS + 1));
        assert!(matches!(DecisionRequest::parse(long.as_bytes()).unwrap_err(), ApiError::Invalid { .. }));
        assert!(DecisionRequest::parse(br#"{"decision":"approve","extra":1}"#).is_err());
        assert_eq!(
            DecisionRequest::parse(br#"{"decision":"approve","extra":1}"#).unwrap_err(),
            ApiError::invalid("extra", "is not a known field")
        );
        assert_eq!(DecisionRequest::parse(br#"{}"#).unwrap_err(), ApiError::invalid("decision", VERDICT_RULE));
        assert_eq!(
            DecisionRequest::parse(br#"{"decision":"approve","comment":5}"#).unwrap_err(),
            ApiError::invalid("comment", "must be a string")
        );
        let nulls = DecisionRequest::parse(br#"{"decision":"reject","comment":null,"feedback":null}"#).unwrap();
        assert_eq!((nulls.comment, nulls.feedback), (None, None));
    }

    #[test]
    fn approve_builds_success_output() {
        let id = ApprovalId::parse("abcdefghijklmnop").unwrap();
        let me = who();
        let fb: Map<String, Value> = serde_json::from_str(r#"{"risk":"low"}"#).unwrap();
        let rec = DecisionRecord {
            approval_id: &id,
            verdict: Verdict::Approve,
            decided_by: &me,
            comment: Some("lgtm"),
            feedback: Some(&fb),
            decided_at_ms: 0,
            prior_approvals: &[],
            on_behalf_of: None,
            receipt: None,
            on_expiry: false,
        };
        let SfnCallback::Success { output } = rec.callback().unwrap() else { panic!() };
        let v: Value = serde_json::from_str(&output).unwrap();
        assert_eq!(v["decision"], "approved");
        assert_eq!(v["approvedBy"]["sub"], "s1");
        assert_eq!(v["feedback"]["risk"], "low");
        assert_eq!(v["decidedAt"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["approvalId"], "abcdefghijklmnop");
        assert!(v.get("approvals").is_none());
        assert!(v.get("receipt").is_none(), "no key ring, no receipt");
        let signed = DecisionRecord { receipt: Some("h.p.s"), ..rec };
        assert_eq!(signed.output()["receipt"], "h.p.s");
    }

    #[test]
    fn reject_builds_failure_and_limits_apply() {
        let id = ApprovalId::parse("abcdefghijklmnop").unwrap();
        let me = who();
        let mut rec = DecisionRecord {
            approval_id: &id,
            verdict: Verdict::Reject,
            decided_by: &me,
            comment: Some("no"),
            feedback: None,
            decided_at_ms: 0,
            prior_approvals: &[],
            on_behalf_of: None,
            receipt: None,
            on_expiry: false,
        };
        let SfnCallback::Failure { error, cause } = rec.callback().unwrap() else { panic!() };
        assert_eq!(error, "Rejected");
        assert_eq!(serde_json::from_str::<Value>(&cause).unwrap()["rejectedBy"]["email"], "a@example.com");
        let big: Map<String, Value> = [("x".to_string(), Value::String("y".repeat(40_000)))].into_iter().collect();
        rec.feedback = Some(&big);
        assert_eq!(rec.callback().unwrap_err().status(), 413, "the rejecter's own feedback over 32,768 chars");
        rec.verdict = Verdict::Approve;
        rec.callback().unwrap();
        let huge: Map<String, Value> =
            [("x".to_string(), Value::String("y".repeat(OUTPUT_MAX_BYTES)))].into_iter().collect();
        rec.feedback = Some(&huge);
        assert_eq!(rec.callback().unwrap_err().status(), 413, "output over 262,144 bytes");
    }

    fn prior(n: usize, comment_chars: usize) -> Vec<PriorApproval> {
        (0..n)
            .map(|i| PriorApproval {
                sub: format!("approver-{i}"),
                email: Some(format!("approver-{i}@example.com")),
                username: Some(format!("approver{i}")),
                comment: Some("é".repeat(comment_chars)),
                at: "2026-01-01T00:00:00.000Z".into(),
            })
            .collect()
    }

    fn reject_with(prior: &[PriorApproval], own_comment: &str) -> Result<Value, ApiError> {
        let id = ApprovalId::parse("abcdefghijklmnop").unwrap();
        let me = who();
        let rec = DecisionRecord {
            approval_id: &id,
            verdict: Verdict::Reject,
            decided_by: &me,
            comment: Some(own_comment),
            feedback: None,
            decided_at_ms: 0,
            prior_approvals: prior,
            on_behalf_of: None,
            receipt: None,
            on_expiry: false,
        };
        match rec.callback()? {
            SfnCallback::Failure { cause, .. } => {
                assert!(cause.chars().count() <= CAUSE_MAX_CHARS, "cause is {} chars", cause.chars().count());
                Ok(serde_json::from_str(&cause).unwrap())
            }
            SfnCallback::Success { .. } => panic!("a rejection must be a failure"),
        }
    }

    #[test]
    fn earlier_long_comments_never_push_a_rejection_over_the_cause_limit() {
        // Short: untouched, no marker.
        let v = reject_with(&prior(3, 100), "no").unwrap();
        assert!(v.get("truncated").is_none());
        assert_eq!(v["approvals"][2]["comment"].as_str().unwrap().chars().count(), 100);
        // 49 earlier approvers with 4,000-character comments (≈ 196,000 characters): shortened, all listed.
        let own = "x".repeat(COMMENT_MAX_CHARS);
        let v = reject_with(&prior(49, COMMENT_MAX_CHARS), &own).unwrap();
        assert_eq!(v["truncated"], true);
        assert_eq!(v["comment"], own.as_str(), "the rejecter's own comment is kept whole");
        assert_eq!(v["rejectedBy"]["sub"], "s1");
        let approvals = v["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 49);
        assert!(v.get("approvalsOmitted").is_none());
        let kept = approvals[0]["comment"].as_str().unwrap();
        assert!(kept.ends_with('…') && kept.chars().count() > 100, "{} chars kept", kept.chars().count());
        assert_eq!(approvals[0]["commentTruncated"], true);
        assert_eq!(approvals[48]["sub"], "approver-48");
        // So many earlier approvals that even their names do not fit: as many as fit, and the count of the rest.
        let v = reject_with(&prior(400, 10), &own).unwrap();
        assert_eq!(v["truncated"], true);
        let listed = v["approvals"].as_array().map_or(0, Vec::len);
        assert!(listed > 50 && listed < 400, "{listed}");
        assert_eq!(v["approvalsOmitted"], 400 - listed);
        assert!(v["approvals"][0]["comment"].is_null());
    }
}
