//! ringi approver SPA (Leptos CSR). Built by Trunk from the repository's `index.html` (the binary, `main.rs`);
//! started by `app/boot.js`, inlined into the page and allowed by its hash (the worker's CSP has no `'unsafe-inline'`).
//!
//! Rooms: `app` (the shell and its pages), `router` (the page a path names, navigation), `context` (what every page reads), `i18n` (texts per language),
//! `infra` (API, sign-in, storage, configuration, dates), `components` (shared pieces), `pages`.
//! `early`: what the scripts that run before the wasm take from here, written into them at build time.

mod app;
mod components;
mod context;
pub mod early;
mod i18n;
mod infra;
mod pages;
mod router;

/// Starts the app in the page (the binary's `main`).
pub fn start() {
    console_error_panic_hook::set_once();
    // The first mount is the page's longest main-thread task (each wasm function compiles on its first call): in a
    // task of its own, not added to the instantiation's, so that neither blocks a phone's input for as long.
    leptos::prelude::set_timeout(mount, std::time::Duration::ZERO);
}

fn mount() {
    // index.html shows a static placeholder while the wasm downloads; the app replaces it.
    if let Some(placeholder) = leptos::prelude::document().get_element_by_id("boot") {
        placeholder.remove();
    }
    leptos::mount::mount_to_body(app::App);
}
