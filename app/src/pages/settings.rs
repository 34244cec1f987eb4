//! `/settings`: the signed-in user's out-of-office ("send my approvals to X from … until …"; while it is in
//! effect, new approvals naming them go to X; the ones they have stay, their pages offer to delegate them) and
//! notifications on this device (Web Push: turned on here, off here or by signing out).

use leptos::prelude::*;
use ringi_core::domain::delegation::OutOfOffice;
use serde_json::json;

use crate::components::NoteInput;
use crate::context::{tr, use_app, use_title_tr};
use crate::i18n::push::push_texts;
use crate::infra::api::{self, ApiError};
use crate::infra::push::{self, PushState};
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
            <PushSection />
        </div>
    }
}

/// "Notifications on this device": the state (unsupported, blocked, off, on) and the one button that changes it.
#[component]
fn PushSection() -> impl IntoView {
    let ctx = use_app();
    let vapid = move || ctx.config.get().and_then(|c| c.vapid_public_key);
    let state = LocalResource::new(move || {
        let supported = vapid().is_some();
        async move { push::state(supported).await }
    });
    let failed = RwSignal::new(None::<String>);
    let toggle = Action::new_local(move |on: &bool| {
        let on = *on;
        let key = vapid().unwrap_or_default();
        let lang = ctx.locale.get_untracked().as_str();
        async move {
            let outcome = if on {
                push::turn_on(&key, lang).await
            } else {
                push::forget_this_device().await;
                Ok(())
            };
            failed.set(outcome.err());
            state.refetch();
        }
    });
    let t = move || push_texts(ctx.locale.get());
    let shown = move || {
        let s = state.get().unwrap_or(PushState::Unsupported);
        let text = match s {
            PushState::Unsupported if vapid().is_none() => t().not_configured,
            PushState::Unsupported => t().unsupported,
            PushState::Blocked => t().blocked,
            PushState::Off => t().off,
            PushState::On => t().on,
        };
        let button = match s {
            PushState::Off => Some((t().turn_on, true, "button button--primary")),
            PushState::On => Some((t().turn_off, false, "button button--secondary")),
            _ => None,
        };
        view! {
            <p class="notice notice--info" role="status" data-testid="push-state" data-state=s.as_str()>{text}</p>
            {button.map(|(label, on, class)| view! {
                <button type="button" class=class data-testid="push-toggle" disabled=move || toggle.pending().get()
                    on:click=move |_| { toggle.dispatch_local(on); }>{label}</button>
            })}
        }
    };
    let error = move || {
        failed.get().map(|e| {
            view! { <p class="notice notice--error" role="alert" data-testid="push-error">{t().failed}" "{e}</p> }
        })
    };
    view! {
        <section class="card" aria-labelledby="push-title" data-testid="push-section">
            <h2 id="push-title" class="card__title">{move || t().heading}</h2>
            <p>{move || t().intro}</p>
            {shown}
            {error}
        </section>
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
