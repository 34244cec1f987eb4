//! What the push port takes and gives: a stored device (its subscription and whose it is), one device's outcome
//! of a delivery run, and the cron's retries. Both backends build these.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ringi_core::adapters::webpush::{PushOutcome, Subscription};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::rows::MailJob;

/// Whose subscription it is: from the verified token only.
#[derive(Debug, Clone)]
pub struct PushOwner<'a> {
    pub sub: &'a str,
    /// The verified email (lower case), so that approvals naming the person by email reach the device.
    pub email: Option<&'a str>,
    /// The groups of the token the device subscribed with, so that group approvals reach it.
    pub groups: &'a [String],
}

/// A stored subscription as a delivery reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct PushDevice {
    /// `webpush::endpoint_hash` of the endpoint: what events and logs name.
    pub device: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
}

impl PushDevice {
    pub fn subscription(&self) -> Option<Subscription> {
        Some(Subscription {
            endpoint: self.endpoint.clone(),
            p256dh: URL_SAFE_NO_PAD.decode(&self.p256dh).ok()?,
            auth: URL_SAFE_NO_PAD.decode(&self.auth).ok()?,
        })
    }
}

/// One device's outcome of a delivery run.
#[derive(Debug, Clone)]
pub struct PushTried {
    pub device: String,
    pub outcome: PushOutcome,
    /// `HTTP <status>` or the transport error (scrubbed of the endpoint).
    pub error: Option<String>,
}

impl PushTried {
    /// The `pushed` event's detail (`kind`: the message, request / reminder / escalation / handover).
    pub fn detail(&self, kind: &str) -> Map<String, Value> {
        let mut d = json!({"device": self.device, "mail": kind, "delivered": self.outcome == PushOutcome::Delivered});
        if let Some(e) = &self.error {
            d["error"] = e.clone().into();
        }
        if self.outcome == PushOutcome::Gone {
            d["dropped"] = true.into();
        }
        d.as_object().cloned().unwrap_or_default()
    }
}

/// The cron's push retries: one approval's message still due to these devices.
#[derive(Debug)]
pub struct PushRetry {
    pub job: MailJob,
    pub kind: String,
    pub devices: Vec<PushDevice>,
}
