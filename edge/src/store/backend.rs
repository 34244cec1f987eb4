//! The storage traits the routes, the mailer and the cron call ([`ApprovalStore`]: the decision path;
//! [`GovernanceStore`]: delegation, reassignment, out-of-office), their two implementations — [`D1Store`]
//! (every feature) and [`DynamoStore`] (`STORAGE=dynamodb`, the seed design's token table) — and [`Store`],
//! the one the configuration chose; [`OnExpiryStore`] is the cron's outcome on expiry. Both keep the audit
//! trail. Features only D1 keeps (schedules, chat retries) are reached through [`Store::governance`], which
//! answers `not_supported_by_backend` (501) on DynamoDB.

use std::rc::Rc;

use ringi_core::approval::Verdict;
use ringi_core::audit::Actor;
use ringi_core::audit_export::AuditQuery;
use ringi_core::config::Storage;
use ringi_core::delegation::OutOfOfficeRequest;
use ringi_core::inbox::{Cursor, InboxFilter};
use ringi_core::mail::MailState;
use ringi_core::principal::{Identity, Principal};
use ringi_core::register::NewApproval;
use ringi_core::rules::{Handover, Reassignment};
use ringi_core::vote::RecordedVote;
use ringi_core::{ApiError, ApprovalId};
use serde_json::{Map, Value};
use worker::Env;

use super::approvals::Registered;
use super::delegation::OutOfOfficeRow;
use super::dynamo::DynamoStore;
use super::events::{EventPage, Viewed};
use super::maintenance::Retries;
use super::on_expiry::DueOutcome;
use super::rows::InboxEntry;
use super::{
    Approval, Attempt, CallbackFailure, ClaimRequest, D1Store, Guess, Inserted, Loaded, MailJob, Opened, Registrant,
    Vote,
};
use crate::probe::Probe;

/// Declares [`ApprovalStore`] once, implements it for [`D1Store`] by its own methods (unchanged: the same
/// statements, the same round trips) and for [`Store`] by handing each call to the chosen backend.
macro_rules! approval_store {
    ($( $(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*) => {
        /// What the decision path needs of storage; the semantics (lifecycle, quorum, the claim's
        /// exactly-once, what each failure leaves) are design.md §5 and §6's (failures: faults.md), on every backend.
        #[allow(async_fn_in_trait)] // single-threaded worker: no Send bound wanted
        pub trait ApprovalStore {
            $( $(#[$doc])* async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError>; )*
        }

        impl ApprovalStore for D1Store {
            $( async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError> {
                D1Store::$name(self $(, $arg)*).await
            } )*
        }

        impl ApprovalStore for Store {
            $( async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError> {
                match self {
                    Store::D1(s) => D1Store::$name(s $(, $arg)*).await,
                    Store::DynamoDb(s) => ApprovalStore::$name(s $(, $arg)*).await,
                }
            } )*
        }
    };
}

approval_store! {
    /// The approval alone.
    fn get(&self, id: &ApprovalId) -> Option<Approval>;
    /// The approval with its principals and votes (one snapshot).
    fn load(&self, id: &ApprovalId) -> Option<Loaded>;
    /// What the approval page shows, with the caller's first view recorded and the approval's timeline (D1
    /// also reads the schedule).
    fn view(&self, id: &ApprovalId, actor: &Actor, keys: &str, now: i64, window_ms: i64) -> Viewed;
    /// Registers an approval unless its ID or task token is taken or the credential is over its rate.
    fn insert(&self, id: &ApprovalId, a: &NewApproval, registrant: &Registrant<'_>, now: i64, remind_window_ms: i64) -> Inserted;
    /// The approvals an insert collided with: the same ID, or the same task token.
    fn registered(&self, id: &ApprovalId, token_sha256: &str) -> Vec<Registered>;
    /// One page of the caller's inbox.
    fn inbox(&self, who: &Identity, principals: &[Principal], filter: InboxFilter, now: i64, cursor: Option<Cursor>, limit: usize) -> Vec<InboxEntry>;
    fn votes(&self, id: &ApprovalId) -> Vec<RecordedVote>;
    /// A decision's first round trip (a backend may ignore `guess`: then the route claims or votes after).
    fn open_decision(&self, id: &ApprovalId, guess: Option<&Guess<'_>>) -> Opened;
    /// One approver's vote, once.
    fn record_vote(&self, id: &ApprovalId, vote: &Vote<'_>) -> ();
    /// The exclusive, conditional claim that also records the attempt; `Some` for the one winner.
    fn claim(&self, id: &ApprovalId, c: &ClaimRequest<'_>) -> Option<Attempt>;
    /// Step Functions took the decision: final, confirmed, token dropped.
    fn finish(&self, id: &ApprovalId, claim_id: &str, vote: &Vote<'_>) -> ();
    /// The task is closed after an attempt that may have been delivered: its verdict, unconfirmed.
    fn unconfirmed(&self, id: &ApprovalId, claim_id: &str, now: i64, vote: Option<&Vote<'_>>) -> ();
    /// The task is closed and nothing of ours closed it: expired.
    fn expire(&self, id: &ApprovalId, claim_id: &str, now: i64) -> ();
    /// Nothing was delivered under the claim: decidable again.
    fn release(&self, id: &ApprovalId, claim_id: &str, not_sent: bool) -> ();
    /// [`ApprovalStore::release`] after a failed callback (D1 records the `callback_failed` event with it).
    fn release_failed(&self, id: &ApprovalId, claim_id: &str, not_sent: bool, failure: &CallbackFailure) -> ();
    fn mail_job(&self, id: &ApprovalId) -> Option<MailJob>;
    fn set_mail_state(&self, id: &ApprovalId, state: MailState, mailed: Option<(&Map<String, Value>, i64)>) -> ();
    /// The cron: open approvals past their expiry close.
    fn expire_due(&self, now: i64) -> usize;
    /// The cron: claims whose lease ran out go back to pending.
    fn release_stale_claims(&self, now: i64) -> usize;
    /// One page of the operators' export of the event log.
    fn audit_page(&self, q: &AuditQuery) -> EventPage;
    /// The cron: open approvals whose request mail failed, or whose sender died before `sender_gone_before`
    /// (at most `max_attempts` tries); D1 also returns the chat notifications due by the same rule.
    fn mail_retries(&self, now: i64, max_attempts: i64, sender_gone_before: i64) -> Retries;
}

/// What delegation, reassignment and out-of-office need of storage. Each write commits the change
/// `ringi_core::rules` decided, with its event, under the guards it came with — or nothing of it; a backend
/// adds no rule of its own.
#[allow(async_fn_in_trait)] // single-threaded worker: no Send bound wanted
pub trait GovernanceStore {
    /// Hands the seat `h.from` on to `h.to` (`rules::delegate`) with its `delegated` event; `true` when the seat
    /// is `h.to`'s now (also when an earlier try of this very write made it so).
    async fn delegate(
        &self,
        a: &Loaded,
        h: &Handover,
        actor: &Actor,
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError>;
    /// An operator's reassignment (`rules::reassign`) with its `reassigned` event; `false` when a guard no
    /// longer held (nothing was written).
    async fn reassign(
        &self,
        a: &Loaded,
        r: &Reassignment,
        listed_after: &[Principal],
        actor: &Actor,
        reason: &str,
        now: i64,
    ) -> Result<bool, ApiError>;
    /// The out-of-office of the person with the verified `sub`.
    async fn out_of_office(&self, sub: &str) -> Result<Option<OutOfOfficeRow>, ApiError>;
    /// Sets (or replaces) it; `email`: their verified email, which routes approvals naming them by email too.
    async fn set_out_of_office(
        &self,
        sub: &str,
        email: Option<&str>,
        o: &OutOfOfficeRequest,
        now: i64,
    ) -> Result<(), ApiError>;
    async fn clear_out_of_office(&self, sub: &str) -> Result<(), ApiError>;
}

impl GovernanceStore for D1Store {
    async fn delegate(
        &self,
        a: &Loaded,
        h: &Handover,
        actor: &Actor,
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        D1Store::delegate(self, &a.approval.id, h, actor, note, now).await
    }

    async fn reassign(
        &self,
        a: &Loaded,
        r: &Reassignment,
        listed_after: &[Principal],
        actor: &Actor,
        reason: &str,
        now: i64,
    ) -> Result<bool, ApiError> {
        D1Store::reassign(self, &a.approval.id, r, listed_after, actor, reason, now).await
    }

    async fn out_of_office(&self, sub: &str) -> Result<Option<OutOfOfficeRow>, ApiError> {
        D1Store::out_of_office(self, sub).await
    }

    async fn set_out_of_office(
        &self,
        sub: &str,
        email: Option<&str>,
        o: &OutOfOfficeRequest,
        now: i64,
    ) -> Result<(), ApiError> {
        D1Store::set_out_of_office(self, sub, email, o, now).await
    }

    async fn clear_out_of_office(&self, sub: &str) -> Result<(), ApiError> {
        D1Store::clear_out_of_office(self, sub).await
    }
}

impl GovernanceStore for Store {
    async fn delegate(
        &self,
        a: &Loaded,
        h: &Handover,
        actor: &Actor,
        note: Option<&str>,
        now: i64,
    ) -> Result<bool, ApiError> {
        match self {
            Store::D1(s) => GovernanceStore::delegate(s, a, h, actor, note, now).await,
            Store::DynamoDb(s) => GovernanceStore::delegate(s, a, h, actor, note, now).await,
        }
    }

    async fn reassign(
        &self,
        a: &Loaded,
        r: &Reassignment,
        listed_after: &[Principal],
        actor: &Actor,
        reason: &str,
        now: i64,
    ) -> Result<bool, ApiError> {
        match self {
            Store::D1(s) => GovernanceStore::reassign(s, a, r, listed_after, actor, reason, now).await,
            Store::DynamoDb(s) => GovernanceStore::reassign(s, a, r, listed_after, actor, reason, now).await,
        }
    }

    async fn out_of_office(&self, sub: &str) -> Result<Option<OutOfOfficeRow>, ApiError> {
        match self {
            Store::D1(s) => GovernanceStore::out_of_office(s, sub).await,
            Store::DynamoDb(s) => GovernanceStore::out_of_office(s, sub).await,
        }
    }

    async fn set_out_of_office(
        &self,
        sub: &str,
        email: Option<&str>,
        o: &OutOfOfficeRequest,
        now: i64,
    ) -> Result<(), ApiError> {
        match self {
            Store::D1(s) => GovernanceStore::set_out_of_office(s, sub, email, o, now).await,
            Store::DynamoDb(s) => GovernanceStore::set_out_of_office(s, sub, email, o, now).await,
        }
    }

    async fn clear_out_of_office(&self, sub: &str) -> Result<(), ApiError> {
        match self {
            Store::D1(s) => GovernanceStore::clear_out_of_office(s, sub).await,
            Store::DynamoDb(s) => GovernanceStore::clear_out_of_office(s, sub).await,
        }
    }
}

/// The cron's outcome on expiry (`ringi_core::on_expiry`): what is due, ringi's own claim, its final writes.
#[allow(async_fn_in_trait)] // single-threaded worker: no Send bound wanted
pub trait OnExpiryStore {
    /// Open approvals with an outcome on expiry past their approvers' deadline and before their task's.
    async fn on_expiry_due(&self, now: i64) -> Result<Vec<DueOutcome>, ApiError>;
    /// ringi's claim (an attempt without a person's sub): `Some(recorded attempt)` if it won.
    async fn claim_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
    ) -> Result<Option<Attempt>, ApiError>;
    /// Step Functions took ringi's outcome: decided on expiry, confirmed, with its event.
    async fn finish_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        verdict: Verdict,
        at: i64,
    ) -> Result<(), ApiError>;
    /// The task is closed after an attempt that may have been delivered: its verdict, unconfirmed.
    async fn unconfirmed_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        attempt: &Attempt,
        now: i64,
    ) -> Result<(), ApiError>;
}

impl OnExpiryStore for D1Store {
    async fn on_expiry_due(&self, now: i64) -> Result<Vec<DueOutcome>, ApiError> {
        D1Store::on_expiry_due(self, now).await
    }

    async fn claim_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
    ) -> Result<Option<Attempt>, ApiError> {
        D1Store::claim_on_expiry(self, id, claim_id, now, until, verdict).await
    }

    async fn finish_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        verdict: Verdict,
        at: i64,
    ) -> Result<(), ApiError> {
        D1Store::finish_on_expiry(self, id, claim_id, verdict, at).await
    }

    async fn unconfirmed_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        attempt: &Attempt,
        now: i64,
    ) -> Result<(), ApiError> {
        D1Store::unconfirmed_on_expiry(self, id, claim_id, attempt, now).await
    }
}

impl OnExpiryStore for Store {
    async fn on_expiry_due(&self, now: i64) -> Result<Vec<DueOutcome>, ApiError> {
        match self {
            Store::D1(s) => OnExpiryStore::on_expiry_due(s, now).await,
            Store::DynamoDb(s) => OnExpiryStore::on_expiry_due(s, now).await,
        }
    }

    async fn claim_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        now: i64,
        until: i64,
        verdict: Verdict,
    ) -> Result<Option<Attempt>, ApiError> {
        match self {
            Store::D1(s) => OnExpiryStore::claim_on_expiry(s, id, claim_id, now, until, verdict).await,
            Store::DynamoDb(s) => OnExpiryStore::claim_on_expiry(s, id, claim_id, now, until, verdict).await,
        }
    }

    async fn finish_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        verdict: Verdict,
        at: i64,
    ) -> Result<(), ApiError> {
        match self {
            Store::D1(s) => OnExpiryStore::finish_on_expiry(s, id, claim_id, verdict, at).await,
            Store::DynamoDb(s) => OnExpiryStore::finish_on_expiry(s, id, claim_id, verdict, at).await,
        }
    }

    async fn unconfirmed_on_expiry(
        &self,
        id: &ApprovalId,
        claim_id: &str,
        attempt: &Attempt,
        now: i64,
    ) -> Result<(), ApiError> {
        match self {
            Store::D1(s) => OnExpiryStore::unconfirmed_on_expiry(s, id, claim_id, attempt, now).await,
            Store::DynamoDb(s) => OnExpiryStore::unconfirmed_on_expiry(s, id, claim_id, attempt, now).await,
        }
    }
}

/// The backend `STORAGE` chose.
pub enum Store {
    D1(D1Store),
    DynamoDb(DynamoStore),
}

impl Store {
    pub fn open(env: &Env, probe: Rc<Probe>) -> Result<Self, ApiError> {
        // The isolate's one parsed configuration (loaded before any request reaches a store).
        let cfg = crate::config::load(env).map_err(|_| ApiError::Internal)?;
        Ok(match &cfg.storage {
            Storage::D1 => Self::D1(D1Store::open(env, probe)?),
            Storage::DynamoDb(ddb) => Self::DynamoDb(DynamoStore::new(cfg.clone(), ddb.clone(), probe)),
        })
    }

    /// This request's round trips.
    pub fn probe(&self) -> &Probe {
        match self {
            Self::D1(s) => s.probe(),
            Self::DynamoDb(s) => s.probe(),
        }
    }

    /// The store of the features only D1 keeps; `feature` names the one asked for in the 501.
    pub fn governance(&self, feature: &'static str) -> Result<&D1Store, ApiError> {
        match self {
            Self::D1(s) => Ok(s),
            Self::DynamoDb(_) => Err(ApiError::NotSupportedByBackend(feature)),
        }
    }
}
