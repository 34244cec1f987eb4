//! JSON shapes of the edge API, shared by the worker (serializing) and the SPA (deserializing).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::deferred::Deferred;
use crate::adapters::idp::{IdpProfile, TokenUse};
use crate::base::error::ErrorCode;
use crate::base::json::{FromJson, Members, ReadError};
use crate::base::principal::Principal;
use crate::base::sign_in::SignInRequirement;
use crate::base::status::{ApprovalStatus, Verdict};
use crate::domain::form::FormField;
use crate::domain::on_expiry::OnExpiry;
use crate::domain::quorum::Quorum;
use crate::domain::vote::{AuditEntry, Progress};

/// `GET /config.json`: the SPA's runtime configuration (no secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpaConfig {
    /// Hosted UI base URL (Cognito profile; empty otherwise). The SPA uses the endpoints below.
    pub cognito_domain: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub issuer: String,
    /// The token the SPA must send as the API bearer: the worker's `TOKEN_USE`.
    #[serde(default)]
    pub token_use: TokenUse,
    pub default_locale: String,
    pub version: String,
    /// `ADMIN_GROUP`: the SPA offers the audit page to members (the worker checks again on every request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_group: Option<String>,
    /// `cognito` or `oidc`: which sign-out the SPA uses (Cognito's `/logout` or RP-initiated logout).
    #[serde(default)]
    pub provider: IdpProfile,
    /// Where sign-in starts (the worker's copy of the discovery document for OIDC, so the SPA never fetches it).
    #[serde(default)]
    pub authorization_endpoint: String,
    /// Where the SPA exchanges the code.
    #[serde(default)]
    pub token_endpoint: String,
    /// Where sign-out ends the provider's session; absent: only the tab's session ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_session_endpoint: Option<String>,
    /// The scopes the SPA asks for (`SIGN_IN_SCOPES`).
    #[serde(default)]
    pub scope: String,
    /// `GROUPS_CLAIM`, for display only (the audit link for operators).
    #[serde(default)]
    pub groups_claim: String,
    /// `VAPID_KEY`'s public key (uncompressed P-256 point, base64url): the `applicationServerKey` a device
    /// subscribes with. Absent: push is off on this installation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vapid_public_key: Option<String>,
}

impl FromJson for SpaConfig {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            cognito_domain: m.get("cognitoDomain"),
            client_id: m.get("clientId"),
            redirect_uri: m.get("redirectUri"),
            issuer: m.get("issuer"),
            token_use: m.or_default("tokenUse"),
            default_locale: m.get("defaultLocale"),
            version: m.get("version"),
            admin_group: m.or_default("adminGroup"),
            provider: m.or_default("provider"),
            authorization_endpoint: m.or_default("authorizationEndpoint"),
            token_endpoint: m.or_default("tokenEndpoint"),
            end_session_endpoint: m.or_default("endSessionEndpoint"),
            scope: m.or_default("scope"),
            groups_claim: m.or_default("groupsClaim"),
            vapid_public_key: m.or_default("vapidPublicKey"),
        })
    }
}

/// `201`/`200` answer to a registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterResponse {
    pub id: String,
    pub url: String,
    pub expires_at: String,
}

/// `POST …/decision` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionResponse {
    pub id: String,
    pub status: ApprovalStatus,
    /// The verdict a `decided_unconfirmed` answer stands for (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    pub progress: Progress,
}

impl FromJson for DecisionResponse {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            id: m.get("id"),
            status: m.get("status"),
            verdict: m.or_default("verdict"),
            progress: m.get("progress"),
        })
    }
}

/// `GET /api/v1/approvals/{id}`: the approval as an approver may see it. Never the token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    pub id: String,
    pub status: ApprovalStatus,
    /// The verdict of a decided approval (`approved`, `rejected`, `decided_unconfirmed`), else null.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// `decided_unconfirmed`: who sent the callback that may have been delivered (email, user name or sub).
    #[serde(default)]
    pub attempted_by: Option<String>,
    pub title: String,
    pub summary: String,
    pub details: Map<String, Value>,
    pub form: Vec<FormField>,
    pub approvers: Vec<Principal>,
    pub quorum: Quorum,
    pub progress: Progress,
    pub created_at: String,
    pub expires_at: String,
    pub decided_at: Option<String>,
    pub context: Map<String, Value>,
    /// The authenticated registrant (`api-key:…` / `client:…`), apart from the free-text `context`.
    #[serde(default)]
    pub registered_by: Option<String>,
    pub locale: Option<String>,
    /// The caller's own earlier decision, if any.
    pub my_decision: Option<AuditEntry>,
    /// All recorded decisions (the audit trail).
    pub decisions: Deferred<Vec<AuditEntry>>,
    /// The approval's event log, oldest first (read in the same round trip as the approval).
    #[serde(default)]
    pub events: Deferred<Vec<crate::domain::audit::Event>>,
    /// Who asked (people): they may see it but not decide it (separation of duty).
    #[serde(default)]
    pub requested_by: Vec<Principal>,
    /// Why this caller may not decide although listed (`self_approval`: they asked for it); null if they may.
    #[serde(default)]
    pub cannot_decide: Option<ErrorCode>,
    /// The caller may decide it now ([`ApprovalView::decidable`]): ringi says so, and a client shows the form on it
    /// alone.
    #[serde(default)]
    pub can_decide: bool,
    /// What ringi does itself when nobody decides before `expiresAt`.
    #[serde(default)]
    pub on_expiry: OnExpiry,
    /// The verdict was ringi's own, on expiry (`onExpiry`), not a person's.
    #[serde(default)]
    pub decided_on_expiry: bool,
    /// Reminders and escalation (core::domain::schedule): what is due when, and what was done.
    #[serde(default)]
    pub schedule: Deferred<crate::domain::schedule::ScheduleView>,
    /// The hand-overs of slots (delegation, out-of-office routing), in chain order.
    #[serde(default)]
    pub delegations: Deferred<Vec<crate::domain::delegation::DelegationView>>,
    /// The caller's standing: deciding, deciding for someone, or handed on.
    #[serde(default)]
    pub my_seat: crate::domain::delegation::MySeat,
    /// The sign-in a decision needs (`requireSignIn`; `crate::domain::step_up`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_sign_in: Option<SignInRequirement>,
    /// The caller's sign-in does not meet `require_sign_in` now: the app signs them in again before it sends
    /// a decision (the worker refuses one with `step_up_required` either way).
    #[serde(default)]
    pub step_up: bool,
}

impl FromJson for ApprovalView {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            id: m.get("id"),
            status: m.get("status"),
            verdict: m.or_default("verdict"),
            attempted_by: m.or_default("attemptedBy"),
            title: m.get("title"),
            summary: m.get("summary"),
            details: m.get("details"),
            form: m.get("form"),
            approvers: m.get("approvers"),
            quorum: m.get("quorum"),
            progress: m.get("progress"),
            created_at: m.get("createdAt"),
            expires_at: m.get("expiresAt"),
            decided_at: m.get("decidedAt"),
            context: m.get("context"),
            registered_by: m.or_default("registeredBy"),
            locale: m.get("locale"),
            my_decision: m.get("myDecision"),
            decisions: m.get("decisions"),
            events: m.or_default("events"),
            requested_by: m.or_default("requestedBy"),
            cannot_decide: m.or_default("cannotDecide"),
            can_decide: m.or_default("canDecide"),
            on_expiry: m.or_default("onExpiry"),
            decided_on_expiry: m.or_default("decidedOnExpiry"),
            schedule: m.or_default("schedule"),
            delegations: m.or_default("delegations"),
            my_seat: m.or_default("mySeat"),
            require_sign_in: m.or_default("requireSignIn"),
            step_up: m.or_default("stepUp"),
        })
    }
}

impl ApprovalView {
    /// Whether the caller may decide: pending (not past its expiry), not decided by them, no reason they may not
    /// (`cannot_decide`), and a seat of their own (not handed on).
    pub fn decidable(&self) -> bool {
        self.status == ApprovalStatus::Pending
            && self.my_decision.is_none()
            && self.cannot_decide.is_none()
            && self.my_seat.holds
    }

    /// The typed `locale` (`None` when absent or one this build does not know).
    pub fn locale(&self) -> Option<crate::base::locale::Locale> {
        self.locale.as_deref().and_then(crate::base::locale::Locale::parse)
    }

    /// What the approval's `context` says asked for it.
    pub fn context(&self) -> crate::base::context::ApprovalContext {
        crate::base::context::ApprovalContext::from_map(&self.context)
    }
}

impl InboxItem {
    /// What the approval's `context` says asked for it.
    pub fn context(&self) -> crate::base::context::ApprovalContext {
        crate::base::context::ApprovalContext::from_map(&self.context)
    }
}

/// One row of the inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub id: String,
    pub status: ApprovalStatus,
    /// As in [`ApprovalView::verdict`].
    #[serde(default)]
    pub verdict: Option<Verdict>,
    pub title: String,
    pub summary: String,
    pub context: Map<String, Value>,
    pub progress: Progress,
    pub created_at: String,
    pub expires_at: String,
    pub decided_at: Option<String>,
    /// As in [`ApprovalView::cannot_decide`]: listed, but not for this caller to decide.
    #[serde(default)]
    pub cannot_decide: Option<ErrorCode>,
    /// As in [`ApprovalView::decided_on_expiry`].
    #[serde(default)]
    pub decided_on_expiry: bool,
    /// The escalation happened: principals were added (the inbox marks it).
    #[serde(default)]
    pub escalated: bool,
    /// The caller handed their slot on to this principal (delegation or out-of-office routing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated_to: Option<Principal>,
}

/// `GET /api/v1/approvals?status=…&cursor=…`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxPage {
    pub items: Vec<InboxItem>,
    pub next_cursor: Option<String>,
}

crate::from_json_by_serde!(InboxPage);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::base::error::ErrorBody;
    use crate::base::json::{agrees, from_str};

    fn approval() -> Value {
        json!({
            "id": "Zo8XKxfXpqFSGvPXHwUJwQ", "status": "pending", "verdict": "approve", "attemptedBy": "a@x",
            "title": "Deploy", "summary": "v2", "details": {"env": "prod", "n": [1, 2.5]},
            "form": [
                {"name": "why", "label": "Why", "type": "text", "maxLength": 10, "required": true, "help": "h"},
                {"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"]},
                {"name": "cost", "label": "Cost", "type": "number", "min": 0, "max": 1.5},
                {"name": "ok", "label": "OK", "type": "boolean"},
                {"name": "note", "label": "Note", "type": "textarea"}
            ],
            "approvers": [{"sub": "s"}, {"email": "e@x"}, {"group": "g"}],
            "quorum": 2, "progress": {"approvals": 1, "required": 2},
            "createdAt": "2026-01-01T00:00:00Z", "expiresAt": "2026-01-02T00:00:00Z", "decidedAt": null,
            "context": {"executionArn": "arn"}, "registeredBy": "api-key:k", "locale": "ja",
            "myDecision": {"decision": "approve", "by": "me", "comment": "c", "feedback": {"risk": "low"}, "at": "t"},
            "decisions": [{"decision": "reject", "by": "you", "comment": null, "feedback": null, "at": "t"}],
            "events": [], "requestedBy": [{"email": "r@x"}], "cannotDecide": "self_approval", "canDecide": false,
            "onExpiry": "reject", "decidedOnExpiry": false, "schedule": {"reminders": []}, "delegations": [],
            "mySeat": {"holds": true, "onBehalfOf": {"email": "o@x"}, "delegatedTo": null},
            "requireSignIn": {"maxAgeSeconds": 300, "acr": ["mfa"], "mfa": true}, "stepUp": true
        })
    }

    #[test]
    fn the_approval_is_read_as_serde_reads_it() {
        agrees::<ApprovalView>(approval());
        let mut other = approval();
        other["quorum"] = json!("all");
        other["verdict"] = Value::Null;
        agrees::<ApprovalView>(other);
    }

    #[test]
    fn the_approval_read_keeps_its_deferred_lists_as_text() {
        let view: ApprovalView = from_str(&approval().to_string()).unwrap();
        assert_eq!(view.decisions.decode().unwrap()[0].by, "you");
        assert_eq!(view, serde_json::from_str(&approval().to_string()).unwrap());
    }

    #[test]
    fn the_configuration_the_decision_answer_and_an_error_are_read_as_serde_reads_them() {
        agrees::<SpaConfig>(json!({
            "cognitoDomain": "https://d", "clientId": "c", "redirectUri": "https://r", "issuer": "https://i",
            "tokenUse": "id", "defaultLocale": "en", "version": "1", "adminGroup": "ops", "provider": "oidc",
            "authorizationEndpoint": "https://a", "tokenEndpoint": "https://t", "endSessionEndpoint": "https://e",
            "scope": "openid", "groupsClaim": "groups", "vapidPublicKey": "k"
        }));
        agrees::<DecisionResponse>(json!({
            "id": "x", "status": "decided_unconfirmed", "verdict": "reject", "progress": {"approvals": 0, "required": 1}
        }));
        agrees::<ErrorBody>(json!({"error": {
            "code": "step_up_required", "message": "m", "field": "f", "requireSignIn": {"maxAgeSeconds": 60}
        }}));
    }
}
