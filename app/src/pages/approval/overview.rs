//! Title, status, who asked, when it runs out, progress, and what became of the request.

use leptos::prelude::*;
use ringi_core::api::wire::ApprovalView;
use ringi_core::base::error::ErrorCode;
use ringi_core::base::status::{ApprovalStatus, Verdict};
use ringi_core::domain::on_expiry::OnExpiry;
use ringi_core::domain::vote::{AuditEntry, Progress};

use super::state::{use_approval, Outcome};
use crate::components::{FactRow, ProgressDots, StatusBadge};
use crate::context::use_app;
use crate::infra::time::{self, Urgency};

#[component]
pub fn Overview() -> impl IntoView {
    let state = use_approval();
    move || {
        let v = state.view.get()?;
        let status = state.status.get().unwrap_or(v.status);
        // Right after deciding, the outcome message says it already.
        let just_decided = state.outcome.with(|o| matches!(o, Some(Outcome::Done { .. })));
        Some(view! {
            <Head v=v.clone() status />
            <Notices v status just_decided />
        })
    }
}

#[component]
fn Head(v: ApprovalView, status: ApprovalStatus) -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    let info = v.context();
    let requesters = (!v.requested_by.is_empty())
        .then(|| v.requested_by.iter().map(|p| p.value().to_owned()).collect::<Vec<_>>().join(", "));
    let decided = matches!(status, ApprovalStatus::Approved | ApprovalStatus::Rejected);
    let absolute = move |raw: String| move || time::absolute_str(&raw, ctx.locale.get());
    let expires_ms = time::parse(&v.expires_at);
    let urgency = move || match (status, expires_ms) {
        (ApprovalStatus::Pending, Some(ms)) => Urgency::of(ms, ctx.now.get()).class(),
        _ => "urgency",
    };
    let expires_rel =
        move || expires_ms.map(|ms| time::relative(ms, ctx.now.get(), ctx.locale.get())).unwrap_or_default();
    let execution = info.execution_arn.clone().map(|arn| {
        let shown = match (info.machine(), info.execution()) {
            (Some(m), Some(e)) => format!("{m} / {e}"),
            _ => arn.clone(),
        };
        view! {
            <FactRow label=|t| t.execution>
                <code class="facts__code" title=arn>
                    {shown}
                </code>
            </FactRow>
        }
    });
    let expires = (!decided).then(|| {
        let (at, shown) = (v.expires_at.clone(), absolute(v.expires_at.clone()));
        view! {
            <FactRow label=|t| t.expires_label>
                <span class=urgency data-testid="expires">
                    <time datetime=at>{shown}</time>
                    " ("
                    {expires_rel}
                    ")"
                </span>
            </FactRow>
        }
    });
    view! {
        <header class="card approval__head" aria-busy=move || state.reloading.get().to_string()>
            <div class="approval__badges">
                <StatusBadge status verdict=v.verdict />
            </div>
            <h1 id="approval-title" class="page__title" data-testid="approval-title">
                {v.title}
            </h1>
            <dl class="facts">
                {info.requested_by.map(|who| view! { <FactRow label=|t| t.requested_by>{who}</FactRow> })}
                {v
                    .registered_by
                    .map(|by| view! { <FactRow label=|t| t.registered_by testid="registered-by">{by}</FactRow> })}
                {requesters.map(|who| view! { <FactRow label=|t| t.requester testid="requester">{who}</FactRow> })}
                {execution}
                {info.step.map(|step| view! { <FactRow label=|t| t.step>{step}</FactRow> })}
                <FactRow label=|t| t.created_label>{absolute(v.created_at)}</FactRow>
                {expires}
                {v.decided_at.map(|at| view! { <FactRow label=|t| t.decided_label>{absolute(at)}</FactRow> })}
                <FactRow label=|t| t.approvals_label>
                    <ProgressDots progress=v.progress />
                </FactRow>
            </dl>
        </header>
    }
}

/// What became of the request: unconfirmed, expired, decided by someone else, or the caller's own decision.
#[component]
fn Notices(v: ApprovalView, status: ApprovalStatus, just_decided: bool) -> impl IntoView {
    let ctx = use_app();
    let unconfirmed = (status == ApprovalStatus::DecidedUnconfirmed).then(|| {
        let approve = v.verdict != Some(Verdict::Reject);
        let by = v.attempted_by.clone().unwrap_or_default();
        view! {
            <p class="notice notice--unconfirmed" role="status" data-testid="unconfirmed-notice">
                {move || (ctx.texts().unconfirmed_notice)(approve, &by)}
            </p>
        }
    });
    let expired = (status == ApprovalStatus::Expired).then(|| {
        let at = v.expires_at.clone();
        view! {
            <p class="notice notice--expired" data-testid="expired-notice">
                {move || (ctx.texts().expired_notice)(&time::absolute_str(&at, ctx.locale.get()))}
            </p>
        }
    });
    // Separation of duty: listed, but the caller asked for it.
    let own_request = (v.cannot_decide == Some(ErrorCode::SelfApproval) && !status.is_final()).then(|| {
        view! {
            <p class="notice notice--info" role="status" data-testid="self-approval-notice">
                {move || ctx.texts().self_approval_notice}
            </p>
        }
    });
    let approve_on_expiry = v.on_expiry == OnExpiry::Approve;
    let on_expiry = (v.on_expiry != OnExpiry::None && status == ApprovalStatus::Pending).then(|| {
        view! {
            <p class="notice notice--info" data-testid="on-expiry-notice">
                {move || (ctx.texts().on_expiry_notice)(approve_on_expiry)}
            </p>
        }
    });
    let decided = matches!(status, ApprovalStatus::Approved | ApprovalStatus::Rejected);
    // ringi's own outcome: nobody decided in time.
    let auto = (decided && v.decided_on_expiry).then(|| {
        let approved = status == ApprovalStatus::Approved;
        view! {
            <p
                class=if approved { "notice notice--approved" } else { "notice notice--rejected" }
                data-testid="auto-decided-notice"
            >
                {move || (ctx.texts().auto_decided_notice)(approved)}
            </p>
        }
    });
    // Someone else's decision; the caller's own is told by <MyDecision>.
    let by_others = (decided && !v.decided_on_expiry && v.my_decision.is_none()).then(|| {
        let approved = status == ApprovalStatus::Approved;
        view! {
            <p
                class=if approved { "notice notice--approved" } else { "notice notice--rejected" }
                data-testid="decided-notice"
            >
                {move || if approved { ctx.texts().decided_notice_approved } else { ctx.texts().decided_notice_rejected }}
            </p>
        }
    });
    let mine =
        v.my_decision.filter(|_| !just_decided).map(|mine| view! { <MyDecision mine status progress=v.progress /> });
    view! { {own_request}{on_expiry}{unconfirmed}{expired}{auto}{by_others}{mine} }
}

#[component]
fn MyDecision(mine: AuditEntry, status: ApprovalStatus, progress: Progress) -> impl IntoView {
    let ctx = use_app();
    let approve = mine.verdict() == Some(Verdict::Approve);
    let text = move || {
        let when = time::absolute_str(&mine.at, ctx.locale.get());
        if approve {
            (ctx.texts().you_approved)(&when)
        } else {
            (ctx.texts().you_rejected)(&when)
        }
    };
    let waiting = approve && status == ApprovalStatus::Pending;
    view! {
        <div class="notice notice--mine" data-testid="my-decision">
            <p>{text}</p>
            {waiting
                .then(|| {
                    view! { <p>{move || (ctx.texts().waiting_for_others)(progress.approvals, progress.required)}</p> }
                })}
        </div>
    }
}
