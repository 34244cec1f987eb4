//! `/a/{id}`: one approval request — what is asked, the feedback form, Approve / Reject behind a
//! confirmation, the outcome, the hand-overs, the schedule (reminders, escalation), and the history.

mod body;
mod confirm;
mod delegate;
mod feedback;
mod field;
mod form;
mod form_state;
mod handovers;
mod history;
mod outcome;
mod overview;
mod schedule;
mod state;

pub(crate) mod timeline;

use leptos::prelude::*;

use crate::components::{Block, ErrorCard, OnDemand, Part, Skeleton};
use crate::context::{tr, use_app, use_title};
use crate::pages::not_found::Missing;
use crate::pages::sign_in::Reauthenticate;
use body::Body;
use confirm::ConfirmDialog;
use delegate::{DelegateAction, DelegationNotices};
use form::DecisionForm;
use handovers::Handovers;
use history::History;
use outcome::Outcomes;
use overview::Overview;
use schedule::{EscalatedNotice, Schedule};
use state::{use_approval, ApprovalState, Phase};
use timeline::Timeline;

#[component]
pub fn ApprovalPage(id: String) -> impl IntoView {
    let ctx = use_app();
    let state = ApprovalState::new(id);
    provide_context(state);
    provide_context(delegate::DelegateState::new());
    use_title(move || {
        state.view.with(|v| v.as_ref().map(|v| v.title.clone())).unwrap_or_else(|| ctx.texts().approval_title.into())
    });
    view! {
        <div class="page approval" data-testid="approval-page">
            <Transition fallback=ApprovalSkeleton set_pending=state.reloading>
                {view! { <Content /> }.into_any()}
            </Transition>
            <ConfirmDialog />
        </div>
    }
}

#[component]
fn ApprovalSkeleton() -> impl IntoView {
    view! {
        <Skeleton
            class="card skeleton"
            testid="approval-loading"
            label=|t| t.loading
            blocks=&[Block::Chip, Block::Title, Block::Line, Block::Short]
        />
        <Skeleton class="card skeleton" blocks=&[Block::Line, Block::Short, Block::Button] />
    }
}

/// The page by load phase. Created under the <Transition>: its phase memo reads the approval there, so that
/// the Transition shows the skeleton first and reports every reload as pending. A failed retry keeps the
/// phase, so the error card (and the focused retry button) stays and only its detail changes.
#[component]
fn Content() -> impl IntoView {
    let state = use_approval();
    let phase = Memo::new(move |_| state.phase());
    move || match phase.get() {
        Phase::Loading => ().into_any(),
        Phase::SignIn => view! { <Reauthenticate step_up=state.step_up.get_untracked() /> }.into_any(),
        Phase::NotFound => view! { <NotYours /> }.into_any(),
        Phase::Failed => view! {
            <ErrorCard
                name="approval"
                title=|t| t.approval_title
                body=|t| t.err_load_failed
                detail=Signal::derive(move || state.load_error())
                pending=state.reloading
                on_retry=move || state.approval.refetch()
            />
        }
        .into_any(),
        Phase::Ready => view! { <Ready /> }.into_any(),
    }
}

#[component]
fn Ready() -> impl IntoView {
    let state = use_approval();
    view! {
        <Overview />
        // In the timeline's chunk, without a card of its own: if that chunk cannot be fetched, the timeline's card
        // under the form stands for both.
        <OnDemand load=notices in_page=true quiet=true />
        // What became of the caller's decision is part of the decision: never in a chunk that might not come.
        <Outcomes />
        // Plain closures rather than <Show>: each reads memos or signals set once, so it re-runs only when its
        // answer changes.
        {move || {
            (state.form.restored.get() && state.can_decide.get())
                .then(|| {
                    view! {
                        <p class="notice notice--info" role="status" data-testid="draft-restored">
                            {tr(|t| t.draft_restored)}
                        </p>
                    }
                })
        }}
        <Body />
        {move || {
            state
                .can_decide
                .get()
                .then(|| {
                    view! {
                        <DecisionForm />
                        <DelegateAction />
                    }
                })
        }}
        <OnDemand load=below_the_form in_page=true />
    }
}

/// Under the overview: the escalation and the hand-overs that concern the caller. With the rest of what is not the
/// decision itself, in a chunk of its own fetched once the page's top is there (the page's first download is
/// smaller by it, and the decision does not wait for it).
#[leptos::wasm_split::wasm_split(approval_below, fallible, wasm_split_path = ::leptos::wasm_split)]
fn notices() -> Part {
    Ok(|| {
        view! {
            <EscalatedNotice />
            <DelegationNotices />
        }
        .into_any()
    })
}

/// What is below the decision (hand-overs, schedule, history, timeline), in the same chunk as the notices.
#[leptos::wasm_split::wasm_split(approval_below, fallible, wasm_split_path = ::leptos::wasm_split)]
fn below_the_form() -> Part {
    Ok(|| {
        view! {
            <Handovers />
            <Schedule />
            <History />
            <Timeline />
        }
        .into_any()
    })
}

/// 404: unknown, or not addressed to the caller (deliberately the same).
#[component]
fn NotYours() -> impl IntoView {
    view! {
        <Missing
            class="card"
            testid="approval-not-found"
            title_id="nf-title"
            title=|t| t.err_not_found_title
            body=|t| t.err_not_found_body
        />
    }
}
