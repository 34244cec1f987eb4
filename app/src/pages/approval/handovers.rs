//! The chain of hand-overs (delegation, out-of-office routing), in chain order, each with its note.

use leptos::prelude::*;

use super::state::use_approval;
use crate::context::use_app;

#[component]
pub fn Handovers() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    move || {
        let chain = state.listed(|v| &v.delegations)?;
        if chain.is_empty() {
            return None;
        }
        let t = ctx.texts().delegation;
        let items = chain
            .into_iter()
            .map(|h| {
                let text = if h.routed { t.routed_item } else { t.chain_item };
                let line = text(h.slot.value(), h.to.value());
                let note = h.note.map(|n| view! { <q class="delegation__note">{n}</q> });
                view! { <li data-testid="delegation-item">{line}" "{note}</li> }
            })
            .collect_view();
        Some(view! {
            <section class="card delegations" aria-labelledby="delegations-title" data-testid="handovers">
                <h2 id="delegations-title" class="card__title">{t.chain_heading}</h2>
                <ul class="delegations__list">{items}</ul>
            </section>
        })
    }
}
