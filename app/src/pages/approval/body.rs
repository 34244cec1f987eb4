//! What is asked: the summary (plain text, never parsed as markup) and the details (a field list).

use leptos::prelude::*;

use super::state::use_approval;
use crate::components::object_view;
use crate::context::{tr, use_app};

#[component]
pub fn Body() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    move || {
        let (summary, details) = state.view.with(|v| v.as_ref().map(|v| (v.summary.clone(), v.details.clone())))?;
        let summary = (!summary.trim().is_empty()).then(|| {
            view! {
                <section class="card" aria-labelledby="summary-title">
                    <h2 id="summary-title" class="card__title">{tr(|t| t.summary_heading)}</h2>
                    <p class="summary" data-testid="summary">{summary}</p>
                </section>
            }
        });
        let details = (!details.is_empty()).then(|| {
            view! {
                <section class="card" aria-labelledby="details-title">
                    <h2 id="details-title" class="card__title">{tr(|t| t.details_heading)}</h2>
                    <div data-testid="details">{move || object_view(&details, ctx.texts(), 0)}</div>
                </section>
            }
        });
        Some(view! { {summary}{details} })
    }
}
