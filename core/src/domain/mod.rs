//! The approval's rules: its lifecycle, quorum, votes, delegation, schedule, self-approval, the decision
//! form, what happens on expiry, the registration rate. Above `base`, below everything else.

pub mod approval;
pub mod audit;
pub mod audit_chain;
pub mod callback;
pub mod delegation;
pub mod form;
pub mod inbox;
pub mod on_expiry;
pub mod quorum;
pub mod rate;
pub mod recipients;
pub mod rules;
pub mod schedule;
pub mod self_approval;
pub mod step_up;
pub mod vote;
