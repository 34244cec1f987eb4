//! The status of an approval as a coloured badge (inbox rows and the approval page).

use leptos::prelude::*;
use ringi_core::base::status::{ApprovalStatus, Verdict};

use crate::context::use_app;
use crate::i18n::Texts;

pub fn status_text(t: &Texts, status: ApprovalStatus, verdict: Option<Verdict>) -> &'static str {
    match status {
        ApprovalStatus::DecidedUnconfirmed => (t.status_unconfirmed)(verdict != Some(Verdict::Reject)),
        ApprovalStatus::Pending | ApprovalStatus::Claimed => t.status_pending,
        ApprovalStatus::Approved => t.status_approved,
        ApprovalStatus::Rejected => t.status_rejected,
        ApprovalStatus::Expired => t.status_expired,
    }
}

fn class(status: ApprovalStatus) -> &'static str {
    match status {
        ApprovalStatus::DecidedUnconfirmed => "badge badge--unconfirmed",
        ApprovalStatus::Pending | ApprovalStatus::Claimed => "badge badge--pending",
        ApprovalStatus::Approved => "badge badge--approved",
        ApprovalStatus::Rejected => "badge badge--rejected",
        ApprovalStatus::Expired => "badge badge--expired",
    }
}

#[component]
pub fn StatusBadge(status: ApprovalStatus, #[prop(default = None)] verdict: Option<Verdict>) -> impl IntoView {
    let ctx = use_app();
    view! {
        <span
            class=class(status)
            data-testid="status"
            data-status=status.as_str()
            data-verdict=verdict.map(|v| v.as_str())
        >
            {move || status_text(ctx.texts(), status, verdict)}
        </span>
    }
}
