//! Nothing to show here: an address the SPA has no page for, or an approval that is not the caller's.

use leptos::prelude::*;

use crate::context::{tr, use_title_tr, Pick};

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <Missing
            class="page card"
            testid="not-found-page"
            title_id="not-found-title"
            title=|t| t.not_found_title
            body=|t| t.not_found_body
        />
    }
}

/// What is missing, why that may be, and the way back to the inbox.
#[component]
pub fn Missing(
    class: &'static str,
    testid: &'static str,
    title_id: &'static str,
    title: Pick,
    body: Pick,
) -> impl IntoView {
    use_title_tr(title);
    view! {
        <section class=class aria-labelledby=title_id data-testid=testid>
            <h1 id=title_id class="page__title">{tr(title)}</h1>
            <p>{tr(body)}</p>
            <p>
                <a class="link" href="/">{tr(|t| t.back_to_inbox)}</a>
            </p>
        </section>
    }
}
