//! A button with work in flight behind it (refresh, load more, retry, approve / reject).

use leptos::prelude::*;

/// Busy is said with `aria-disabled` rather than `disabled`, so the button keeps keyboard focus; clicks
/// meanwhile are ignored.
#[component]
pub fn BusyButton(
    class: &'static str,
    #[prop(optional, into)] testid: Option<String>,
    #[prop(into)] busy: Signal<bool>,
    on_click: impl Fn() + 'static,
    children: Children,
) -> impl IntoView {
    view! {
        <button
            type="button"
            class=class
            data-testid=testid
            aria-disabled=move || busy.get().to_string()
            on:click=move |_| {
                if !busy.get_untracked() {
                    on_click()
                }
            }
        >
            {children()}
        </button>
    }
}
