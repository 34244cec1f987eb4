//! The storage port: the traits the routes, the mailer and the cron call, by concern — [`ApprovalStore`]
//! (registration, reads, votes and the claim), [`GovernanceStore`] (delegation, reassignment, out-of-office),
//! [`ScheduleStore`] (reminders, escalation, the mail and chat outbox), [`AuditStore`] (the approval page's
//! view and the event log's export), [`UpkeepStore`] (the cron's expiry, lease and retention sweeps) and
//! [`OnExpiryStore`] (the outcome on expiry) — and the values they take and give ([`rows`], [`decision`],
//! [`records`]). Both backends (`super::d1`, `super::dynamo`) implement every trait; neither is named here.

pub mod decision;
pub mod push;
pub mod records;
pub mod rows;

use signature::*;

/// Every type the traits' signatures name, in scope wherever a `impl_*!` macro implements a trait.
pub(crate) mod signature {
    pub(crate) use ringi_core::adapters::chat::ChannelName;
    pub(crate) use ringi_core::adapters::mail::MailState;
    pub(crate) use ringi_core::adapters::webpush::{PushTargets, Subscription};
    pub(crate) use ringi_core::api::audit_export::AuditQuery;
    pub(crate) use ringi_core::api::register::NewApproval;
    pub(crate) use ringi_core::base::principal::{Identity, Principal};
    pub(crate) use ringi_core::base::status::Verdict;
    pub(crate) use ringi_core::domain::audit::{Actor, EventKind};
    pub(crate) use ringi_core::domain::delegation::OutOfOfficeRequest;
    pub(crate) use ringi_core::domain::inbox::{Cursor, InboxFilter};
    pub(crate) use ringi_core::domain::rules::{Handover, Reassignment};
    pub(crate) use ringi_core::domain::schedule::Outcome;
    pub(crate) use ringi_core::domain::vote::RecordedVote;
    pub(crate) use ringi_core::{ApiError, ApprovalId};
    pub(crate) use serde_json::{Map, Value};

    pub(crate) use crate::store::port::decision::{
        CallbackFailure, ClaimRequest, Guess, Inserted, Opened, Registered, Registrant, Vote,
    };
    pub(crate) use crate::store::port::push::{PushDevice, PushOwner, PushRetry, PushTried};
    pub(crate) use crate::store::port::records::{DueEntry, DueOutcome, EventPage, OutOfOfficeRow, Retries, Viewed};
    pub(crate) use crate::store::port::rows::{Approval, Attempt, InboxEntry, Loaded, MailJob};
}

/// Declares a storage trait once, and with it the macro `$forward` that implements it: `$forward!(inherent T)`
/// by `T`'s inherent methods of the same names (a backend whose methods live in the files of their
/// statements), `$forward!(pick E { A, B })` by handing each call to the backend the enum `E` holds. The
/// first argument is a literal `$` (how a macro writes a macro's metavariables).
macro_rules! store_trait {
    ($d:tt $forward:ident; $(#[$tdoc:meta])* trait $trait:ident {
        $( $(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*
    }) => {
        $(#[$tdoc])*
        #[allow(async_fn_in_trait)] // single-threaded worker: no Send bound wanted
        pub trait $trait {
            $( $(#[$doc])* async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError>; )*
        }

        macro_rules! $forward {
            (inherent $d t:ty) => {
                const _: () = {
                    #[allow(unused_imports)]
                    use $crate::store::port::signature::*;
                    impl $crate::store::port::$trait for $d t {
                        $( async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError> {
                            <$d t>::$name(self $(, $arg)*).await
                        } )*
                    }
                };
            };
            (pick $d e:ident { $d ($d v:ident),* }) => {
                const _: () = {
                    #[allow(unused_imports)]
                    use $crate::store::port::signature::*;
                    impl $crate::store::port::$trait for $d e {
                        $( async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ApiError> {
                            match self {
                                $d ( $d e::$d v(s) => $crate::store::port::$trait::$name(s $(, $arg)*).await, )*
                            }
                        } )*
                    }
                };
            };
        }
        pub(crate) use $forward;
    };
}

store_trait! {
    $ impl_approval_store;
    /// What registration and the decision path need of storage; the semantics (lifecycle, quorum, the claim's
    /// exactly-once) are design.md §5 and §6's, what each failure leaves faults.md's, on every backend.
    trait ApprovalStore {
        /// The approval alone.
        fn get(&self, id: &ApprovalId) -> Option<Approval>;
        /// The approval with its principals and votes (one snapshot).
        fn load(&self, id: &ApprovalId) -> Option<Loaded>;
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
        /// [`ApprovalStore::release`] after a failed callback, with its `callback_failed` event.
        fn release_failed(&self, id: &ApprovalId, claim_id: &str, not_sent: bool, failure: &CallbackFailure) -> ();
    }
}

store_trait! {
    $ impl_audit_store;
    /// The audit trail as people read it: the approval page (with the caller's first view recorded) and the
    /// operators' export.
    trait AuditStore {
        /// What the approval page shows (the approval with its schedule), with the caller's first view recorded
        /// and the approval's timeline.
        fn view(&self, id: &ApprovalId, actor: &Actor, keys: &str, now: i64, window_ms: i64) -> Viewed;
        /// One page of the operators' export of the event log.
        fn audit_page(&self, q: &AuditQuery) -> EventPage;
    }
}

store_trait! {
    $ impl_upkeep_store;
    /// The cron's sweeps: expiry, stale leases, retention. Each run does a bounded batch; a backlog drains
    /// over runs.
    trait UpkeepStore {
        /// The cron: open approvals past their expiry close.
        fn expire_due(&self, now: i64) -> usize;
        /// The cron: claims whose lease ran out go back to pending.
        fn release_stale_claims(&self, now: i64) -> usize;
        /// The cron: closed approvals decided before `before` go, with their rows (the registration counters of
        /// minutes before `rates_before` too). DynamoDB leaves this to the table's TTL.
        fn purge(&self, before: i64, rates_before: i64, now: i64) -> usize;
        /// The cron: audit events older than `before` go (DynamoDB: the TTL each event item carries).
        fn purge_events(&self, before: i64) -> usize;
    }
}

store_trait! {
    $ impl_governance_store;
    /// What delegation, reassignment and out-of-office need of storage. Each write commits the change
    /// `ringi_core::domain::rules` decided, with its event, under the guards it came with — or nothing of it; a backend
    /// adds no rule of its own.
    trait GovernanceStore {
        /// Hands the seat `h.from` on to `h.to` (`rules::delegate`) with its `delegated` event; `true` when the seat
        /// is `h.to`'s now (also when an earlier try of this very write made it so).
        fn delegate(&self, a: &Loaded, h: &Handover, actor: &Actor, note: Option<&str>, now: i64) -> bool;
        /// An operator's reassignment (`rules::reassign`) with its `reassigned` event; `false` when a guard no
        /// longer held (nothing was written).
        fn reassign(&self, a: &Loaded, r: &Reassignment, listed_after: &[Principal], actor: &Actor, reason: &str, now: i64) -> bool;
        /// The out-of-office of the person with the verified `sub`.
        fn out_of_office(&self, sub: &str) -> Option<OutOfOfficeRow>;
        /// Sets (or replaces) it; `email`: their verified email, which routes approvals naming them by email too.
        fn set_out_of_office(&self, sub: &str, email: Option<&str>, o: &OutOfOfficeRequest, now: i64) -> ();
        fn clear_out_of_office(&self, sub: &str) -> ();
    }
}

store_trait! {
    $ impl_schedule_store;
    /// The cron's reminders and escalation (`ringi_core::domain::schedule`) and the outbox: the request mail's and the chat notifications' state and retries. A run
    /// takes due entries under its lease, mails, then marks them done under that lease: a failed mark costs at
    /// most one more mail, never a lost one.
    trait ScheduleStore {
        fn mail_job(&self, id: &ApprovalId) -> Option<MailJob>;
        fn set_mail_state(&self, id: &ApprovalId, state: MailState, mailed: Option<(&Map<String, Value>, i64)>) -> ();
        /// The cron: open approvals whose request mail failed, or whose sender died before `sender_gone_before`
        /// (at most `max_attempts` tries), and the chat notifications due by the same rule.
        fn mail_retries(&self, now: i64, max_attempts: i64, sender_gone_before: i64) -> Retries;
        /// Open approvals inside the default reminder's window not reminded yet, each with the verified emails of
        /// those who voted already (a reminder skips them).
        fn reminders_due(&self, now: i64, window_ms: i64) -> Vec<(MailJob, Vec<String>)>;
        /// Records the default reminder (and its event), once.
        fn mark_reminded(&self, id: &ApprovalId, now: i64, recipients: usize) -> ();
        /// Takes the due entries of open approvals for `lease_ms` under `lease_id` (those of closed approvals are
        /// marked skipped); the entries of one approval and kind come as one.
        fn schedule_due(&self, now: i64, lease_id: &str, lease_ms: i64) -> Vec<DueEntry>;
        /// Marks the entry done (conditional on this run's lease) with the event of what was done, if anything was.
        fn schedule_done(&self, e: &DueEntry, lease_id: &str, now: i64, outcome: Outcome, event: Option<(EventKind, Map<String, Value>)>) -> ();
        /// Gives the entry back (its mail failed): the next run takes it again.
        fn schedule_release(&self, e: &DueEntry, lease_id: &str) -> ();
        /// Adds the escalation principals to an open approval (seats, inboxes) with its event, once; `true` if this
        /// call did.
        fn escalate(&self, id: &ApprovalId, to: &[Principal], note: Option<&str>, now: i64) -> bool;
        /// Records what the channels said to one chat delivery: the channels still due, the state, one `notified`
        /// event per channel tried.
        fn set_chat_state(&self, id: &ApprovalId, state: MailState, still_due: &[ChannelName], tried: &[Map<String, Value>], now: i64) -> ();
    }
}

store_trait! {
    $ impl_on_expiry_store;
    /// The cron's outcome on expiry (`ringi_core::domain::on_expiry`): what is due, ringi's own claim, its final writes.
    trait OnExpiryStore {
        /// Open approvals with an outcome on expiry past their approvers' deadline and before their task's.
        fn on_expiry_due(&self, now: i64) -> Vec<DueOutcome>;
        /// ringi's claim (an attempt without a person's sub): `Some(recorded attempt)` if it won.
        fn claim_on_expiry(&self, id: &ApprovalId, claim_id: &str, now: i64, until: i64, verdict: Verdict) -> Option<Attempt>;
        /// Step Functions took ringi's outcome: decided on expiry, confirmed, with its event.
        fn finish_on_expiry(&self, id: &ApprovalId, claim_id: &str, verdict: Verdict, at: i64) -> ();
        /// The task is closed after an attempt that may have been delivered: its verdict, unconfirmed.
        fn unconfirmed_on_expiry(&self, id: &ApprovalId, claim_id: &str, attempt: &Attempt, now: i64) -> ();
    }
}

store_trait! {
    $ impl_push_store;
    /// Web Push (design.md §9 "Push"): the devices' subscriptions, by the verified `sub`, and the outbox of
    /// messages not delivered yet — put in the outbox as they are looked up, taken out when the push service
    /// answered, retried by the cron like the request mail.
    trait PushStore {
        /// Stores (or replaces, by endpoint) a subscription of `who`; `too_many_devices` past
        /// `webpush::MAX_DEVICES` (a device already stored never counts twice).
        fn subscribe(&self, who: &PushOwner<'_>, s: &Subscription, lang: &str, now: i64) -> ();
        /// Removes `sub`'s subscription with this endpoint (nobody else's); whether there was one.
        fn unsubscribe(&self, sub: &str, endpoint: &str) -> bool;
        /// The devices `targets` reach, each put in the outbox for (`id`, `kind`) as pending.
        fn push_due(&self, id: &ApprovalId, kind: &str, targets: &PushTargets, now: i64) -> Vec<PushDevice>;
        /// One delivery run's outcome: delivered and refused devices leave the outbox, the others stay (failed,
        /// one attempt more), gone subscriptions are removed; one `pushed` event per device tried.
        fn push_done(&self, id: &ApprovalId, kind: &str, tried: &[PushTried], now: i64) -> ();
        /// The cron: outbox entries failed, or pending since before `sender_gone_before`, with fewer than
        /// `max_attempts` tries, of open approvals.
        fn push_retries(&self, now: i64, max_attempts: i64, sender_gone_before: i64) -> Vec<PushRetry>;
    }
}
