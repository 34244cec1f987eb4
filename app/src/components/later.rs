//! Rendering in pieces: what is below the fold comes one main-thread task after the rest of its page.
//!
//! On a phone the first render of a whole page is one long task (each wasm function compiles on its first call),
//! and input waits for it. The page's top (what is asked, the decision) no longer waits for what is below it.

use std::time::Duration;

use leptos::prelude::*;

/// False, then true from the next main-thread task on.
pub fn next_task() -> ReadSignal<bool> {
    let (reached, set) = signal(false);
    // try_set: the page may be gone by then.
    set_timeout(
        move || {
            let _ = set.try_set(true);
        },
        Duration::ZERO,
    );
    reached
}

/// Renders its children in a task of their own, after the one that renders the rest of the page.
#[component]
pub fn Later(children: ChildrenFn) -> impl IntoView {
    let reached = next_task();
    move || reached.get().then(|| children())
}
