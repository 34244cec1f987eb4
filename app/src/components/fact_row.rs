//! One labelled fact of an approval (`<dt>`/`<dd>` in the overview's `<dl class="facts">`).

use leptos::prelude::*;

use crate::context::{tr, Pick};

#[component]
pub fn FactRow(label: Pick, #[prop(optional)] testid: Option<&'static str>, children: Children) -> impl IntoView {
    view! {
        <div class="facts__row">
            <dt>{tr(label)}</dt>
            <dd data-testid=testid>{children()}</dd>
        </div>
    }
}
