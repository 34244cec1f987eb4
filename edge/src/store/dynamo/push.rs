//! Web Push on the token table: not kept yet — every call is the typed refusal `not_supported_by_backend`
//! (design.md §7 "What each backend supports"), so a DynamoDB installation answers the subscribe endpoint with
//! 501 and sends no push; nothing else changes.

use ringi_core::adapters::webpush::{PushTargets, Subscription};
use ringi_core::{ApiError, ApprovalId};

use super::DynamoStore;
use crate::store::port::push::{PushDevice, PushOwner, PushRetry, PushTried};
use crate::store::port::PushStore;

const PUSH: &str = "push notifications";

impl PushStore for DynamoStore {
    async fn subscribe(&self, _: &PushOwner<'_>, _: &Subscription, _: &str, _: i64) -> Result<(), ApiError> {
        Err(ApiError::NotSupportedByBackend(PUSH))
    }

    async fn unsubscribe(&self, _: &str, _: &str) -> Result<bool, ApiError> {
        Err(ApiError::NotSupportedByBackend(PUSH))
    }

    /// Nobody can have subscribed: no device is due.
    async fn push_due(&self, _: &ApprovalId, _: &str, _: &PushTargets, _: i64) -> Result<Vec<PushDevice>, ApiError> {
        Ok(Vec::new())
    }

    async fn push_done(&self, _: &ApprovalId, _: &str, _: &[PushTried], _: i64) -> Result<(), ApiError> {
        Ok(())
    }

    async fn push_retries(&self, _: i64, _: i64, _: i64) -> Result<Vec<PushRetry>, ApiError> {
        Ok(Vec::new())
    }
}
