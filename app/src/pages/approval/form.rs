//! The feedback fields, the comment, and the two buttons (which only open the confirmation).

use leptos::prelude::*;
use ringi_core::api::decision::COMMENT_MAX_CHARS;
use ringi_core::base::status::Verdict;

use super::field::{problem_text, Field};
use super::state::use_approval;
use crate::components::BusyButton;
use crate::context::{tr, use_app};

#[component]
pub fn DecisionForm() -> impl IntoView {
    let state = use_approval();
    let fields = state.form.fields;
    view! {
        <section class="card decide" aria-labelledby="decide-title" data-testid="decision-form">
            <h2 id="decide-title" class="card__title">{tr(|t| t.form_heading)}</h2>
            {move || {
                state
                    .view
                    .with(|v| v.as_ref().is_some_and(|v| v.require_sign_in.is_some()))
                    .then(|| view! { <p class="notice notice--info" data-testid="step-up-notice">{tr(|t| t.step_up_notice)}</p> })
            }}
            <form class="form" novalidate on:submit=|ev| ev.prevent_default()>
                // Set once, when the approval first loads (later reloads keep what is typed): no keyed list needed.
                {move || fields.get().into_iter().map(|state| view! { <Field state /> }).collect_view()}
                <Comment />
                <Show when=move || state.form.marked()>
                    <p class="notice notice--error" role="alert" data-testid="decision-error" data-code="fields">
                        {tr(|t| t.err_fix_fields)}
                    </p>
                </Show>
                <div class="decide__buttons">
                    <DecideButton verdict=Verdict::Approve />
                    <DecideButton verdict=Verdict::Reject />
                </div>
                <p class="decide__hint">{tr(|t| t.decide_hint)}</p>
            </form>
        </section>
    }
}

/// Approve and Reject differ only in verdict, look and label; both only open the confirmation step.
#[component]
fn DecideButton(verdict: Verdict) -> impl IntoView {
    let state = use_approval();
    let (class, testid, icon, label) = match verdict {
        Verdict::Approve => ("button button--approve", "approve", "✓ ", tr(|t| t.approve)),
        Verdict::Reject => ("button button--reject", "reject", "✕ ", tr(|t| t.reject)),
    };
    view! {
        <BusyButton class testid busy=state.sending on_click=move || state.ask(verdict)>
            <span aria-hidden="true">{icon}</span>
            {label}
        </BusyButton>
    }
}

#[component]
fn Comment() -> impl IntoView {
    let ctx = use_app();
    let form = use_approval().form;
    let (comment, problem) = (form.comment, form.comment_problem);
    view! {
        <div class="field" class:field--invalid=move || problem.with(Option::is_some)>
            <label class="field__label" for="comment">
                {tr(|t| t.comment_label)}
            </label>
            <textarea
                id="comment"
                name="comment"
                class="input input--area"
                rows="3"
                maxlength=COMMENT_MAX_CHARS.to_string()
                aria-describedby="comment-help comment-error"
                aria-invalid=move || problem.with(Option::is_some).then_some("true")
                prop:value=move || comment.get()
                on:input=move |ev| {
                    comment.set(event_target_value(&ev));
                    problem.set(None);
                }
                data-testid="comment"
            ></textarea>
            <p id="comment-help" class="field__help">{tr(|t| t.comment_help)}</p>
            <p id="comment-error" class="field__error">{move || problem.get().map(|p| problem_text(ctx.texts(), &p))}</p>
        </div>
    }
}
