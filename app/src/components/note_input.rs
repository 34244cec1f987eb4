use leptos::prelude::*;
use ringi_core::domain::delegation::NOTE_MAX_CHARS;

use crate::context::{tr, Pick};

/// A labelled note (a delegation's, an out-of-office's): a textarea of at most the notes' length, bound to
/// `value`; `id` is also its test id, `help` a text under it.
#[component]
pub fn NoteInput(
    id: &'static str,
    label: Pick,
    value: RwSignal<String>,
    #[prop(optional)] help: Option<Pick>,
) -> impl IntoView {
    let help_id = format!("{id}-help");
    view! {
        <div class="field">
            <label class="field__label" for=id>{tr(label)}</label>
            <textarea
                id=id
                class="input input--area"
                rows="3"
                maxlength=NOTE_MAX_CHARS.to_string()
                aria-describedby=help.map(|_| help_id.clone())
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
                data-testid=id
            ></textarea>
            {help.map(|h| view! { <p id=help_id class="field__help">{tr(h)}</p> })}
        </div>
    }
}
