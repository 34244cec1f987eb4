//! The approval's event log as a timeline: requested, mailed, opened, voted, decided … oldest first, each
//! with who and when, and its detail read generically (so events of any kind show without changes here).

use leptos::prelude::*;
use ringi_core::domain::audit::Event;

use super::state::use_approval;
use crate::context::{tr, use_app, AppContext};
use crate::infra::time;

/// Events the worker sends at most with an approval (its `TIMELINE_MAX`): a full list may be cut.
const TIMELINE_MAX: usize = 200;

#[component]
pub fn Timeline() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    move || {
        let events = state.listed(|v| &v.events)?;
        if events.is_empty() {
            return None;
        }
        let truncated = events.len() >= TIMELINE_MAX;
        let items = events.into_iter().map(|e| event_item(ctx, e)).collect_view();
        Some(view! {
            <section class="card" aria-labelledby="timeline-title" data-testid="timeline">
                <h2 id="timeline-title" class="card__title">{tr(|t| t.audit.timeline_heading)}</h2>
                <ol class="timeline">{items}</ol>
                {truncated.then(|| view! { <p class="muted">{tr(|t| t.audit.timeline_truncated)}</p> })}
            </section>
        })
    }
}

/// One event: what, by whom, when, and its facts.
pub fn event_item(ctx: AppContext, e: Event) -> impl IntoView {
    let kind = e.kind;
    let at = e.at.clone();
    let actor = e.actor.clone();
    let detail = e.detail.clone();
    let when = move || time::absolute_str(&at, ctx.locale.get());
    view! {
        <li class="timeline__event" data-testid="timeline-event" data-kind=kind.as_str()>
            <p class="timeline__line">
                <strong class="timeline__kind">{move || ctx.texts().audit.kind(kind)}</strong>
                " · "
                <span class="timeline__actor" data-testid="timeline-actor">
                    {move || ctx.texts().audit.actor(&actor)}
                </span>
            </p>
            <p class="timeline__when">
                <time datetime=e.at.clone()>{when}</time>
            </p>
            {move || detail_list(ctx, &detail)}
        </li>
    }
}

/// The detail as a definition list (nothing for an empty one).
pub fn detail_list(ctx: AppContext, detail: &serde_json::Map<String, serde_json::Value>) -> Option<AnyView> {
    if detail.is_empty() {
        return None;
    }
    let rows = ctx.texts().audit.detail(detail);
    let rows = rows
        .into_iter()
        .map(|(k, v)| {
            view! {
                <div class="timeline__fact">
                    <dt>{k}</dt>
                    <dd>{v}</dd>
                </div>
            }
        })
        .collect_view();
    Some(view! { <dl class="timeline__facts">{rows}</dl> }.into_any())
}
