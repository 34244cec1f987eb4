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
pub use port::records::{DueEntry, DueOutcome, SCHEDULE_LEASE_MS};
pub use port::rows::{Approval, Attempt, Loaded, MailJob};
pub use port::{ApprovalStore, AuditStore, GovernanceStore, OnExpiryStore, ScheduleStore, UpkeepStore};

use crate::probe::Probe;

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

impl Store {
    pub fn open(env: &Env, probe: Rc<Probe>) -> Result<Self, ApiError> {
        // The isolate's one parsed configuration (loaded before any request reaches a store).
        let cfg = crate::config::load(env).map_err(|_| ApiError::Internal)?;
        Ok(match &cfg.storage {
            Storage::D1 => Self::D1(d1::D1Store::open(env, probe)?),
            Storage::DynamoDb(ddb) => Self::DynamoDb(dynamo::DynamoStore::new(cfg.clone(), ddb.clone(), probe)),
        })
    }

    /// This request's round trips.
    pub fn probe(&self) -> &Probe {
        match self {
            Self::D1(s) => s.probe(),
            Self::DynamoDb(s) => s.probe(),
        }
    }
}
