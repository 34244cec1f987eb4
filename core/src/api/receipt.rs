//! The decision receipt: a compact JWS (ES256, ringi's key ring) that every callback's output carries, so that a
//! later state, an auditor or another account can prove who decided what, and that ringi said so, without
//! trusting the execution history alone. Verified with the keys at `PUBLIC_BASE_URL/.well-known/jwks.json`; its
//! header's `typ` tells it from anything else the ring signs. It names the approval, the verdict, the deciding
//! identities (with whose slot a delegate filled, and the approvals that made up the quorum), the time, the quorum
//! progress, and the SHA-256 digests of the registration and of the task token — never the token itself.

use serde_json::{json, Value};

use crate::api::decision::DecisionRecord;
use crate::base::ids::ApprovalId;
use crate::base::principal::Identity;
use crate::base::status::Verdict;
use crate::base::time::format_rfc3339;
use crate::domain::vote::Progress;

/// The receipt's JWS `typ`.
pub const RECEIPT_TYP: &str = "ringi-receipt+jwt";

/// What a receipt states beyond the decision itself.
#[derive(Debug, Clone)]
pub struct ReceiptFacts<'a> {
    /// Who signs: ringi's public origin (where its keys are published).
    pub issuer: &'a str,
    pub quorum: Progress,
    /// Hex SHA-256 of the registration request as received (absent for approvals registered before ringi kept it).
    pub registration_sha256: Option<&'a str>,
    /// Hex SHA-256 of the task token: a state can compare it with `$$.Task.Token`'s.
    pub task_token_sha256: &'a str,
}

impl<'a> DecisionRecord<'a> {
    /// ringi's own outcome on expiry as a decision (no comment, no feedback, nobody's slot; `ringi`:
    /// `domain::on_expiry::decider`): its receipt has the claims of a person's, with `"reason": "expiry"`.
    pub fn on_expiry(id: &'a ApprovalId, verdict: Verdict, ringi: &'a Identity, decided_at_ms: i64) -> Self {
        Self {
            approval_id: id,
            verdict,
            decided_by: ringi,
            comment: None,
            feedback: None,
            decided_at_ms,
            prior_approvals: &[],
            on_behalf_of: None,
            receipt: None,
            on_expiry: true,
        }
    }

    /// The receipt's claims.
    pub fn receipt_claims(&self, facts: &ReceiptFacts<'_>) -> Value {
        let mut claims = json!({
            "iss": facts.issuer,
            "sub": self.approval_id.as_str(),
            "iat": self.decided_at_ms.div_euclid(1000),
            "approvalId": self.approval_id.as_str(),
            "decision": self.verdict.final_status().as_str(),
            "decidedBy": self.decider(),
            "decidedAt": format_rfc3339(self.decided_at_ms),
            "quorum": {"approvals": facts.quorum.approvals, "required": facts.quorum.required},
            "registrationSha256": facts.registration_sha256,
            "taskTokenSha256": facts.task_token_sha256,
        });
        if let Some(p) = self.on_behalf_of {
            claims["onBehalfOf"] = crate::domain::delegation::principal_value(p);
        }
        if self.on_expiry {
            claims["reason"] = Value::from("expiry");
        }
        if !self.prior_approvals.is_empty() {
            claims["approvals"] = self
                .prior_approvals
                .iter()
                .map(|a| json!({"sub": a.sub, "email": a.email, "username": a.username, "at": a.at}))
                .collect();
        }
        claims
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::decision::PriorApproval;
    use crate::base::ids::ApprovalId;
    use crate::base::principal::Identity;
    use crate::base::status::Verdict;

    #[test]
    fn a_receipt_names_the_decision_the_deciders_the_quorum_and_the_digests() {
        let id = ApprovalId::parse("AAAAAAAAAAAAAAAAAAAAAA").unwrap();
        let bob = Identity {
            sub: "bob-sub".into(),
            email: Some("bob@example.com".into()),
            groups: vec![],
            username: None,
            scopes: vec![],
            client_id: "c".into(),
            sign_in: Default::default(),
        };
        let prior = [PriorApproval {
            sub: "alice-sub".into(),
            email: Some("alice@example.com".into()),
            username: None,
            comment: Some("fine by me".into()),
            at: "2026-12-05T09:00:00Z".into(),
        }];
        let record = DecisionRecord {
            approval_id: &id,
            verdict: Verdict::Approve,
            decided_by: &bob,
            comment: Some("go"),
            feedback: None,
            decided_at_ms: 1_796_461_200_123,
            prior_approvals: &prior,
            on_behalf_of: None,
            receipt: None,
            on_expiry: false,
        };
        let facts = ReceiptFacts {
            issuer: "https://ringi.example.com",
            quorum: Progress { approvals: 2, required: 2 },
            registration_sha256: Some("ab"),
            task_token_sha256: "cd",
        };
        let c = record.receipt_claims(&facts);
        assert_eq!(c["iss"], "https://ringi.example.com");
        assert_eq!((c["sub"].as_str(), c["approvalId"].as_str()), (Some(id.as_str()), Some(id.as_str())));
        assert_eq!(c["iat"], 1_796_461_200);
        assert_eq!(c["decision"], "approved");
        assert_eq!(c["decidedBy"]["sub"], "bob-sub");
        assert_eq!(c["quorum"], json!({"approvals": 2, "required": 2}));
        assert_eq!((c["registrationSha256"].as_str(), c["taskTokenSha256"].as_str()), (Some("ab"), Some("cd")));
        assert_eq!(c["approvals"][0]["sub"], "alice-sub");
        assert!(c["approvals"][0].get("comment").is_none(), "identities and times, not what they wrote");
        assert!(c.get("onBehalfOf").is_none() && c.get("reason").is_none());
        let text = c.to_string();
        assert!(!text.contains("go\"") && !text.contains("fine by me"));
    }

    #[test]
    fn ringis_receipt_names_ringi_and_the_expiry_with_the_claims_of_a_persons() {
        use crate::domain::on_expiry::decider;
        let id = ApprovalId::parse("abcdefghijklmnopqrstuv").unwrap();
        let ringi = decider("https://ringi.example.com");
        let facts = ReceiptFacts {
            issuer: "https://ringi.example.com",
            quorum: Progress { approvals: 1, required: 2 },
            registration_sha256: Some("ab"),
            task_token_sha256: "cd",
        };
        let c = DecisionRecord::on_expiry(&id, Verdict::Reject, &ringi, 1_796_461_200_123).receipt_claims(&facts);
        assert_eq!(c["decision"], "rejected");
        assert_eq!(c["decidedBy"], json!({"sub": "https://ringi.example.com", "email": null, "username": null}));
        assert_eq!((c["reason"].as_str(), c["iss"].as_str()), (Some("expiry"), Some("https://ringi.example.com")));
        assert_eq!(c["quorum"], json!({"approvals": 1, "required": 2}));
        assert!(c.get("approvals").is_none() && c.get("onBehalfOf").is_none());
    }
}
