//! A decision request, its limits, and the Step Functions callback it turns into (design.md §3).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::approval::Verdict;
use crate::error::ApiError;
use crate::form::{validate_feedback, FormField};
use crate::ids::ApprovalId;
use crate::principal::Identity;
use crate::sfn::SfnCallback;
use crate::time::format_rfc3339;

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
        let v: Value = serde_json::from_slice(body).map_err(|e| ApiError::MalformedBody(e.to_string()))?;
        let obj = v.as_object().ok_or_else(|| ApiError::invalid("body", "must be a JSON object"))?;
        match obj.get("decision").and_then(Value::as_str) {
            Some("approve" | "reject") => {}
            _ => return Err(ApiError::invalid("decision", "must be \"approve\" or \"reject\"")),
        }
        if obj.get("comment").is_some_and(|c| !c.is_string() && !c.is_null()) {
            return Err(ApiError::invalid("comment", "must be a string"));
        }
        if obj.get("feedback").is_some_and(|f| !f.is_object() && !f.is_null()) {
            return Err(ApiError::invalid("feedback", "must be a JSON object"));
        }
        let req: Self = serde_json::from_value(v).map_err(|e| ApiError::invalid("body", e.to_string()))?;
        if req.comment.as_deref().is_some_and(|c| c.chars().count() > COMMENT_MAX_CHARS) {
            return Err(ApiError::invalid("comment", format!("must be at most {COMMENT_MAX_CHARS} characters")));
        }
        Ok(req)
    }

    /// Checks the feedback against the approval's form.
    pub fn validate_against(&self, form: &[FormField]) -> Result<(), ApiError> {
        let empty = Map::new();
        validate_feedback(form, self.feedback.as_ref().unwrap_or(&empty))
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
    pub prior_approvals: &'a [Value],
}

impl DecisionRecord<'_> {
    /// The decision object handed to the workflow (SendTaskSuccess `output` / SendTaskFailure `cause`).
    pub fn output(&self) -> Value {
        let by = json!({
            "sub": self.decided_by.sub,
            "email": self.decided_by.email,
            "username": self.decided_by.username,
        });
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
        if !self.prior_approvals.is_empty() {
            out["approvals"] = Value::Array(self.prior_approvals.to_vec());
        }
        out
    }

    /// The callback, with Step Functions' size limits checked before anything is claimed (413).
    pub fn callback(&self) -> Result<SfnCallback, ApiError> {
        let text = self.output().to_string();
        match self.verdict {
            Verdict::Approve if text.len() > OUTPUT_MAX_BYTES => Err(ApiError::PayloadTooLarge(format!(
                "the decision output would be {} bytes; Step Functions accepts at most {OUTPUT_MAX_BYTES}",
                text.len()
            ))),
            Verdict::Approve => Ok(SfnCallback::Success { output: text }),
            Verdict::Reject if text.chars().count() > CAUSE_MAX_CHARS => Err(ApiError::PayloadTooLarge(format!(
                "the rejection cause would be {} characters; Step Functions accepts at most {CAUSE_MAX_CHARS}",
                text.chars().count()
            ))),
            Verdict::Reject => Ok(SfnCallback::Failure { error: "Rejected".into(), cause: text }),
        }
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
        }
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
        };
        let SfnCallback::Success { output } = rec.callback().unwrap() else { panic!() };
        let v: Value = serde_json::from_str(&output).unwrap();
        assert_eq!(v["decision"], "approved");
        assert_eq!(v["approvedBy"]["sub"], "s1");
        assert_eq!(v["feedback"]["risk"], "low");
        assert_eq!(v["decidedAt"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["approvalId"], "abcdefghijklmnop");
        assert!(v.get("approvals").is_none());
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
        };
        let SfnCallback::Failure { error, cause } = rec.callback().unwrap() else { panic!() };
        assert_eq!(error, "Rejected");
        assert_eq!(serde_json::from_str::<Value>(&cause).unwrap()["rejectedBy"]["email"], "a@example.com");
        let big: Map<String, Value> = [("x".to_string(), Value::String("y".repeat(40_000)))].into_iter().collect();
        rec.feedback = Some(&big);
        assert_eq!(rec.callback().unwrap_err().status(), 413, "cause over 32,768 chars");
        rec.verdict = Verdict::Approve;
        rec.callback().unwrap();
        let huge: Map<String, Value> =
            [("x".to_string(), Value::String("y".repeat(OUTPUT_MAX_BYTES)))].into_iter().collect();
        rec.feedback = Some(&huge);
        assert_eq!(rec.callback().unwrap_err().status(), 413, "output over 262,144 bytes");
    }
}
