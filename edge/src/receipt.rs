//! A decision's receipt (`ringi_core::api::receipt`), signed with ringi's key ring: one place for a person's
//! decision and for ringi's own outcome on expiry, both signed in the worker before anything is claimed.

use ringi_core::api::decision::DecisionRecord;
use ringi_core::api::receipt::{ReceiptFacts, RECEIPT_TYP};
use ringi_core::base::ids::TaskToken;
use ringi_core::config::Config;
use ringi_core::domain::vote::Progress;
use ringi_core::ApiError;
use serde_json::json;

use crate::platform::log;

/// `None` where ringi has no key ring. A signing failure is logged (never the token) and fails the decision
/// before it is claimed, so the approval stays decidable.
pub async fn sign(
    cfg: &Config,
    record: &DecisionRecord<'_>,
    quorum: Progress,
    registration_sha256: Option<&str>,
    token: &TaskToken,
) -> Result<Option<String>, ApiError> {
    let Some(ring) = cfg.keys.as_ref() else { return Ok(None) };
    let token_sha256 = token.fingerprint();
    let facts =
        ReceiptFacts { issuer: cfg.issuer_url(), quorum, registration_sha256, task_token_sha256: &token_sha256 };
    crate::keys::sign(ring, RECEIPT_TYP, &record.receipt_claims(&facts)).await.map(Some).map_err(|e| {
        log("error", "receipt_not_signed", json!({"approvalId": record.approval_id.as_str(), "error": e}));
        ApiError::Internal
    })
}
