//! ringi approver SPA (Leptos CSR). Built by Trunk from the repository's `index.html`; started by
//! `app/boot.js` (no inline script: the worker's CSP has no `'unsafe-inline'`).

mod api;
mod app;
mod approval;
mod auth;
mod config;
mod feedback;
mod i18n;
mod inbox;
mod storage;
mod time;

fn main() {
    console_error_panic_hook::set_once();
    // First of all: on /auth/callback, take code/state out of the address bar and the history entry.
    auth::capture_callback();
    // index.html shows a static placeholder while the wasm downloads; the app replaces it.
    if let Some(placeholder) = leptos::prelude::document().get_element_by_id("boot") {
        placeholder.remove();
    }
    leptos::mount::mount_to_body(app::App);
}
