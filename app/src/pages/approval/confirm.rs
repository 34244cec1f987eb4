//! The modal confirmation of Approve / Reject: the only control that sends a decision.

use leptos::prelude::*;
use ringi_core::base::status::Verdict;

use super::state::use_approval;
use crate::context::{tr, use_app};

#[component]
pub fn ConfirmDialog() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    let reject = move || state.confirming.get() == Some(Verdict::Reject);
    view! {
        <dialog
            class="confirm"
            node_ref=state.dialog
            aria-labelledby="confirm-title"
            aria-describedby="confirm-body"
            data-testid="confirm-dialog"
            on:close=move |_| state.confirming.set(None)
        >
            <h2 id="confirm-title" class="confirm__title">
                {move || if reject() { ctx.texts().confirm_reject_title } else { ctx.texts().confirm_approve_title }}
            </h2>
            <p class="confirm__what">{move || state.view.with(|v| v.as_ref().map(|v| v.title.clone()))}</p>
            <p id="confirm-body">
                {move || if reject() { ctx.texts().confirm_reject_body } else { ctx.texts().confirm_approve_body }}
            </p>
            <div class="confirm__buttons">
                // Focused first when the dialog opens: the safe choice.
                <button
                    type="button"
                    class="button button--secondary"
                    data-testid="confirm-cancel"
                    autofocus
                    on:click=move |_| state.close_dialog()
                >
                    {tr(|t| t.cancel)}
                </button>
                <button
                    type="button"
                    class=move || if reject() { "button button--reject" } else { "button button--approve" }
                    data-testid="confirm-decision"
                    on:click=move |_| state.confirm()
                >
                    {move || if reject() { ctx.texts().confirm_reject } else { ctx.texts().confirm_approve }}
                </button>
            </div>
        </dialog>
    }
}
