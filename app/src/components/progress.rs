//! "k of n approvals" with one dot per required approval.

use leptos::prelude::*;
use ringi_core::domain::vote::Progress;

use crate::context::use_app;

/// The dots are decoration (hidden from assistive technology); the text is what is read.
#[component]
pub fn ProgressDots(progress: Progress) -> impl IntoView {
    let ctx = use_app();
    let Progress { approvals, required } = progress;
    let dots = (0..required.min(10))
        .map(|i| view! { <span class="progress__dot" class:progress__dot--on=i < approvals></span> })
        .collect_view();
    view! {
        <span class="progress" data-testid="progress">
            <span class="progress__dots" aria-hidden="true">{dots}</span>
            <span class="progress__text">{move || (ctx.texts().progress)(approvals, required)}</span>
        </span>
    }
}
