//! Storage: the port ([`port`]: the traits by concern and the values they carry) and its two backends,
//! siblings that implement every trait — `d1` (D1, the default) and `dynamo` (`STORAGE=dynamodb`, the seed
//! design's token table). This file only picks the one the configuration chose; nothing outside this folder
//! names a backend.

mod d1;
mod dynamo;
mod port;

use std::rc::Rc;

use ringi_core::config::Storage;
use ringi_core::ApiError;
use worker::Env;

pub use port::decision::{CallbackFailure, ClaimRequest, Guess, Inserted, Opened, Registrant, Vote};
pub use port::push::{PushDevice, PushOwner, PushTried};
pub use port::records::{DueEntry, DueOutcome, SCHEDULE_LEASE_MS};
pub use port::rows::{Approval, Attempt, Loaded, MailJob};
pub use port::{ApprovalStore, AuditStore, GovernanceStore, OnExpiryStore, PushStore, ScheduleStore, UpkeepStore};

use crate::platform::log;
use crate::probe::Probe;

/// Seals the events `probe` noted as written (after the response, or at the end of a cron run; `sweep`: also
/// whatever is left unsealed on D1 — a request that died between its write and its seal). Through a probe of
/// its own: the request's round-trip count and its injected faults are the request's. A failure is logged;
/// what is left is sealed by the next write of the approval or the next cron run.
pub async fn seal_written(env: &Env, probe: &Probe, sweep: bool) {
    let noted = probe.take_written_events();
    if noted.is_none() && !sweep {
        return;
    }
    let approvals = noted.unwrap_or_default();
    let store = match Store::open(env, Probe::new(None, Default::default())) {
        Ok(s) => s,
        Err(_) => return,
    };
    // A full batch may leave more: a few more rounds, bounded.
    for _ in 0..5 {
        match store.seal_events(&approvals, sweep).await {
            Ok(n) if n >= ringi_core::sql::chain::SEAL_BATCH as usize => continue,
            Ok(_) => break,
            Err(e) => {
                log("warn", "chain_seal_failed", serde_json::json!({"error": e.to_string()}));
                break;
            }
        }
    }
}

/// The backend `STORAGE` chose.
pub enum Store {
    D1(d1::D1Store),
    DynamoDb(dynamo::DynamoStore),
}

port::impl_approval_store!(pick Store { D1, DynamoDb });
port::impl_audit_store!(pick Store { D1, DynamoDb });
port::impl_upkeep_store!(pick Store { D1, DynamoDb });
port::impl_governance_store!(pick Store { D1, DynamoDb });
port::impl_schedule_store!(pick Store { D1, DynamoDb });
port::impl_on_expiry_store!(pick Store { D1, DynamoDb });
port::impl_push_store!(pick Store { D1, DynamoDb });

impl Store {
    pub fn open(env: &Env, probe: Rc<Probe>) -> Result<Self, ApiError> {
        // The isolate's one parsed configuration (loaded before any request reaches a store).
        let cfg = crate::config::load(env).map_err(|_| ApiError::Internal)?;
        Ok(match &cfg.storage {
            Storage::D1 => Self::D1(d1::D1Store::open(env, probe)?),
            Storage::DynamoDb(ddb) => Self::DynamoDb(dynamo::DynamoStore::new(cfg.clone(), ddb.clone(), probe)),
        })
    }

    /// Seals unsealed events into their approvals' hash chains (`ringi_core::domain::audit_chain`): on D1 all of
    /// them (a bounded number per call); on DynamoDB those of `approvals` and, with `sweep` (the cron), of the
    /// approvals whose events a request left unsealed. How many it sealed.
    pub async fn seal_events(&self, approvals: &[String], sweep: bool) -> Result<usize, ApiError> {
        match self {
            Self::D1(s) => s.seal_events().await,
            Self::DynamoDb(s) => s.seal_events(approvals, sweep).await,
        }
    }

    /// This request's round trips.
    pub fn probe(&self) -> &Probe {
        match self {
            Self::D1(s) => s.probe(),
            Self::DynamoDb(s) => s.probe(),
        }
    }
}
