//! Rendering in pieces: a long list's rows below the fold come one main-thread task after the rest of its page.
//!
//! Only where the rest is long: every task boundary lets the browser lay out and paint what is there, which on a
//! phone costs more than rendering a short page at once (the approval page renders in one task).

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
