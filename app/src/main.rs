//! ringi approver SPA (Leptos CSR). Built by Trunk from the repository's `index.html`; started by
//! `app/boot.js` (no inline script: the worker's CSP has no `'unsafe-inline'`).

mod app;
mod config;
mod i18n;

fn main() {
    console_error_panic_hook::set_once();
    // index.html shows a static placeholder while the wasm downloads; the app replaces it.
    if let Some(placeholder) = leptos::prelude::document().get_element_by_id("boot") {
        placeholder.remove();
    }
    leptos::mount::mount_to_body(app::App);
}
