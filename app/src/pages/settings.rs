//! `/settings`: the signed-in user's out-of-office ("send my approvals to X from … until …"). While it is in
//! effect, new approvals naming them go to X; the ones they have stay (their pages offer to delegate them).

use leptos::prelude::*;
use ringi_core::domain::delegation::OutOfOffice;
use serde_json::json;

use crate::components::NoteInput;
use crate::context::{tr, use_app, use_title_tr};
use crate::infra::api::{self, ApiError};
use crate::infra::time;

/// What the last save or clear came to.
#[derive(Clone, Debug, PartialEq)]
enum Done {
    Saved,
    Cleared,
    Refused(String),
}

#[component]
pub fn Settings() -> impl IntoView {
    use_title_tr(|t| t.delegation.settings_title);
    let ctx = use_app();
    let current = LocalResource::new(|| async { api::out_of_office().await });
    let (delegate, from, until, note) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let saved = RwSignal::new(None::<Done>);
    let save = Action::new_local(move |_: &()| async move {
        let t = ctx.texts().delegation;
        let Some(until) = time::local_date_to_rfc3339(&until.get_untracked(), "23:59:59") else {
            return Done::Refused(t.ooo_until_required.into());
        };
        let from = time::local_date_to_rfc3339(&from.get_untracked(), "00:00:00");
        let note = note.get_untracked();
        let body = json!({
            "delegate": {"email": delegate.get_untracked().trim()},
            "from": from,
            "until": until,
            "note": (!note.trim().is_empty()).then_some(note),
        });
        match api::set_out_of_office(&body).await {
            Ok(_) => {
                current.refetch();
                Done::Saved
            }
            Err(ApiError::Invalid { field, message }) => Done::Refused(match field {
                Some(f) => format!("{f}: {message}"),
                None => message,
            }),
            Err(e) => Done::Refused(e.to_string()),
        }
    });
    let clear = Action::new_local(move |_: &()| async move {
        match api::clear_out_of_office().await {
            Ok(()) => {
                current.refetch();
                Done::Cleared
            }
            Err(e) => Done::Refused(e.to_string()),
        }
    });
    Effect::new(move |_| saved.set(save.value().get()));
    Effect::new(move |_| {
        if let Some(v) = clear.value().get() {
            saved.set(Some(v));
        }
    });
    let shown = move || {
        let t = ctx.texts().delegation;
        match current.get() {
            None => ().into_any(),
            Some(Ok(Some(o))) => current_view(t, &o, ctx.locale.get()).into_any(),
            Some(Ok(None)) => view! { <p data-testid="ooo-current" data-active="none">{t.ooo_none}</p> }.into_any(),
            Some(Err(e)) => view! { <p class="notice notice--error" role="alert">{e.to_string()}</p> }.into_any(),
        }
    };
    let outcome = move || {
        let t = ctx.texts().delegation;
        saved.get().map(|s| match s {
            Done::Saved => {
                view! { <p class="notice notice--approved" role="status" data-testid="ooo-saved">{t.ooo_saved}</p> }
                    .into_any()
            }
            Done::Cleared => {
                view! { <p class="notice notice--info" role="status" data-testid="ooo-saved">{t.ooo_cleared}</p> }
                    .into_any()
            }
            Done::Refused(m) => {
                view! { <p class="notice notice--error" role="alert" data-testid="ooo-error">{m}</p> }.into_any()
            }
        })
    };
    view! {
        <div class="page settings" data-testid="settings-page">
            <h1 class="page__title">{tr(|t| t.delegation.settings_title)}</h1>
            <section class="card" aria-labelledby="ooo-title">
                <h2 id="ooo-title" class="card__title">{tr(|t| t.delegation.ooo_heading)}</h2>
                <p>{tr(|t| t.delegation.ooo_intro)}</p>
                {shown}
                <form class="form" novalidate on:submit=move |ev| {
                    ev.prevent_default();
                    save.dispatch_local(());
                }>
                    {field_input("ooo-delegate", |t| t.delegation.ooo_delegate_label, "email", delegate)}
                    {field_input("ooo-from", |t| t.delegation.ooo_from_label, "date", from)}
                    {field_input("ooo-until", |t| t.delegation.ooo_until_label, "date", until)}
                    <NoteInput id="ooo-note" label=|t| t.delegation.ooo_note_label value=note />
                    <div class="decide__buttons">
                        <button type="submit" class="button button--primary" data-testid="ooo-save">
                            {tr(|t| t.delegation.ooo_save)}
                        </button>
                        <button type="button" class="button button--secondary" data-testid="ooo-clear" on:click=move |_| { clear.dispatch_local(()); }>
                            {tr(|t| t.delegation.ooo_clear)}
                        </button>
                    </div>
                </form>
                <div class="outcome" data-testid="ooo-outcome">{outcome}</div>
            </section>
        </div>
    }
}

/// A labelled input bound to `value`.
fn field_input(
    id: &'static str,
    label: fn(&crate::i18n::Texts) -> &'static str,
    kind: &'static str,
    value: RwSignal<String>,
) -> impl IntoView {
    view! {
        <div class="field">
            <label class="field__label" for=id>{tr(label)}</label>
            <input
                id=id
                class="input"
                type=kind
                data-testid=id
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        </div>
    }
}

fn current_view(
    t: &'static crate::i18n::delegation::DelegationTexts,
    o: &OutOfOffice,
    locale: ringi_core::base::locale::Locale,
) -> impl IntoView {
    let until = time::absolute_str(&o.until, locale);
    let text = (t.ooo_current)(o.delegate.value(), &until, o.active);
    view! { <p class="notice notice--info" data-testid="ooo-current" data-active=o.active.to_string()>{text}</p> }
}
