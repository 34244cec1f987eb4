//! Something could not be loaded: what, why in one technical line, and a retry button.

use leptos::prelude::*;

use super::BusyButton;
use crate::context::{tr, use_app, Pick};

/// Kept mounted across retries by its page (which switches on the load phase, not on the error): a failed
/// retry only updates `detail` in place, so the button under the user's focus is never re-created.
#[component]
pub fn ErrorCard(
    /// `config`, `approval`, `inbox`: the card is `{name}-error`, its button `{name}-retry`.
    name: &'static str,
    title: Pick,
    body: Pick,
    /// The technical detail (a message, never a Debug dump).
    #[prop(into)]
    detail: Signal<String>,
    /// A retry is in flight.
    #[prop(into)]
    pending: Signal<bool>,
    on_retry: impl Fn() + 'static,
    /// The whole main area (the shell's own page), else a card in a page.
    #[prop(optional)]
    page: bool,
    /// Under the page's own `<h1>` (`<h2>`), else the page's heading (`<h1>`).
    #[prop(optional)]
    in_page: bool,
) -> impl IntoView {
    let ctx = use_app();
    let title_id = format!("{name}-error-title");
    let heading = if in_page {
        view! { <h2 id=title_id.clone() class="card__title">{tr(title)}</h2> }.into_any()
    } else {
        view! { <h1 id=title_id.clone() class="page__title">{tr(title)}</h1> }.into_any()
    };
    view! {
        <section
            class=if page { "page card card--error" } else { "card card--error" }
            role="alert"
            aria-labelledby=title_id
            data-testid=format!("{name}-error")
        >
            {heading}
            <p>{tr(body)}</p>
            <p class="card__detail">
                <code>{move || detail.get()}</code>
            </p>
            <BusyButton class="button button--primary" testid=format!("{name}-retry") busy=pending on_click=on_retry>
                {move || if pending.get() { ctx.texts().retrying } else { ctx.texts().retry }}
            </BusyButton>
        </section>
    }
}
