//! The result of the last decision attempt, announced (status for success, alert for problems). This area
//! takes focus when a result arrives.

use leptos::prelude::*;
use ringi_core::api::wire::DecisionResponse;
use ringi_core::base::error::ErrorCode;
use ringi_core::base::status::{ApprovalStatus, Verdict};

use super::state::{use_approval, ApprovalState, Outcome};
use crate::context::{tr, use_app};
use crate::i18n::Texts;

#[component]
pub fn Outcomes() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    view! {
        <div id="decision-outcome" class="outcome" tabindex="-1" data-testid="decision-outcome">
            {move || {
                state
                    .sending
                    .get()
                    .then(|| {
                        view! {
                            <p class="notice notice--info notice--sending" role="status" data-testid="sending">
                                <span class="spinner" aria-hidden="true"></span>
                                {tr(|t| t.sending)}
                            </p>
                        }
                    })
            }}
            {move || state.outcome.get().map(|o| outcome_view(ctx.texts(), o, state))}
        </div>
    }
}

fn outcome_view(t: &'static Texts, outcome: Outcome, state: ApprovalState) -> AnyView {
    match outcome {
        Outcome::Done { verdict, response } => done_view(t, verdict, response),
        Outcome::Conflict(e) => {
            let text = conflict_text(t, e.error_code());
            problem_view(e.code, text, None, None)
        }
        Outcome::NotFound => problem_view(ErrorCode::NotFound.code().into(), t.err_not_found_body, None, None),
        Outcome::Retry(verdict, detail) => {
            let retry = view! {
                <button type="button" class="button button--primary" data-testid="retry" on:click=move |_| state.send(verdict)>
                    {tr(|t| t.retry)}
                </button>
            }
            .into_any();
            problem_view("unavailable".into(), t.err_unavailable, Some(detail), Some(retry))
        }
        Outcome::Failed(detail) => problem_view("failed".into(), t.err_server, Some(detail), None),
        // Shown in the form, next to the fields (see DecisionForm); the sign-in replaces the page.
        Outcome::FixFields | Outcome::SignIn | Outcome::StepUp(_) => ().into_any(),
    }
}

fn done_view(t: &'static Texts, verdict: Verdict, response: DecisionResponse) -> AnyView {
    let unconfirmed = response.status == ApprovalStatus::DecidedUnconfirmed;
    let text = match (verdict, response.status) {
        (_, ApprovalStatus::DecidedUnconfirmed) => (t.result_unconfirmed)(response.verdict != Some(Verdict::Reject)),
        (Verdict::Reject, _) => t.result_rejected.to_owned(),
        (Verdict::Approve, ApprovalStatus::Approved) => t.result_approved.to_owned(),
        (Verdict::Approve, _) => (t.result_recorded)(response.progress.approvals, response.progress.required),
    };
    let class = match (unconfirmed, verdict) {
        (true, _) => "notice notice--unconfirmed notice--big",
        (false, Verdict::Approve) => "notice notice--approved notice--big",
        (false, Verdict::Reject) => "notice notice--rejected notice--big",
    };
    view! {
        <p class=class role="status" data-testid="decision-result" data-result=response.status.as_str()>
            <span class="notice__icon" aria-hidden="true">
                {if verdict == Verdict::Approve { "✓" } else { "✕" }}
            </span>
            {text}
        </p>
    }
    .into_any()
}

/// Nothing (or not what was asked) was decided: what happened, its technical detail, and Retry where
/// sending the same decision again can help. `data-code` tells the tests which case it is.
fn problem_view(code: String, text: &'static str, detail: Option<String>, retry: Option<AnyView>) -> AnyView {
    view! {
        <div class="notice notice--error" role="alert" data-testid="decision-error" data-code=code>
            <p>{text}</p>
            {detail.map(|d| view! { <p class="card__detail"><code>{d}</code></p> })}
            {retry}
        </div>
    }
    .into_any()
}

/// The five 409s of a decision (design §6); any other code (a newer worker's) gets the general text.
fn conflict_text(t: &'static Texts, code: Option<ErrorCode>) -> &'static str {
    match code {
        Some(ErrorCode::AlreadyDecided) => t.err_already_decided,
        Some(ErrorCode::Expired) => t.err_expired,
        Some(ErrorCode::InProgress) => t.err_in_progress,
        Some(ErrorCode::AlreadyVoted) => t.err_already_voted,
        Some(ErrorCode::AlreadySatisfied) => t.err_already_satisfied,
        Some(ErrorCode::SelfApproval) => t.self_approval_notice,
        _ => t.err_conflict,
    }
}
