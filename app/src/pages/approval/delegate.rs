//! Delegation on the approval page: the "Delegate…" action (whom, a note, confirmed in a modal dialog), what
//! became of the caller's slot (delegated, or held for someone), the chain of hand-overs, and the hint for an
//! approver who is out of office (beside the action).

use leptos::html;
use leptos::prelude::*;
use ringi_core::base::principal::Principal;
use ringi_core::domain::delegation::{DelegationView, OutOfOffice};

use super::state::{use_approval, ApprovalState};
use crate::components::{NoteInput, OnDemand, Part};
use crate::context::{focus_id, tr, use_app};
use crate::infra::api::{self, ApiError};
use crate::infra::time;

/// What the approval page keeps of delegation in its own code: the dialog (its form, the request) and the
/// out-of-office hint come in a chunk of their own (`delegate_dialog`), since most approvers never delegate.
#[derive(Clone, Copy)]
pub struct DelegateState {
    /// An opening not yet shown, with whom to fill in (the out-of-office stand-in). The dialog takes it once its
    /// chunk is there, so a click while the chunk downloads is not lost and a remount does not reopen it.
    opening: RwSignal<Option<Option<Principal>>>,
    /// Whether the dialog's chunk has been asked for (it stays mounted from then on).
    wanted: RwSignal<bool>,
    /// To whom the caller just handed their slot (the confirmation under the page's top).
    done: RwSignal<Option<Principal>>,
}

impl DelegateState {
    pub fn new() -> Self {
        Self { opening: RwSignal::new(None), wanted: RwSignal::new(false), done: RwSignal::new(None) }
    }

    /// Opens the dialog, with `to` filled in (the out-of-office stand-in) if given.
    fn open(self, to: Option<Principal>) {
        self.done.set(None);
        self.opening.set(Some(to));
        self.wanted.set(true);
    }
}

fn use_delegate() -> DelegateState {
    expect_context::<DelegateState>()
}

/// Shown under the decision form while the caller holds a slot; the dialog (or the retry card of its chunk)
/// comes in under the button. The out-of-office hint comes with the dialog's chunk, fetched once this is shown:
/// a hint, so a chunk that cannot be fetched leaves it out rather than showing a retry card.
#[component]
pub fn DelegateAction() -> impl IntoView {
    let d = use_delegate();
    view! {
        <section class="card delegate" aria-labelledby="delegate-heading" data-testid="delegate-section">
            <h2 id="delegate-heading" class="visually-hidden">{tr(|t| t.delegation.dialog_title)}</h2>
            <OnDemand load=away_hint in_page=true quiet=true />
            <button
                type="button"
                class="button button--secondary"
                data-testid="delegate-open"
                on:click=move |_| d.open(None)
            >
                {tr(|t| t.delegation.delegate)}
            </button>
            <Show when=move || d.wanted.get()>
                <OnDemand load=delegate_dialog in_page=true />
            </Show>
        </section>
    }
}

#[leptos::wasm_split::wasm_split(delegate_dialog, fallible, wasm_split_path = ::leptos::wasm_split)]
fn delegate_dialog() -> Part {
    Ok(|| view! { <DelegateDialog /> }.into_any())
}

/// In the dialog's chunk too: the caller's out-of-office, asked for when the action is shown.
#[leptos::wasm_split::wasm_split(delegate_dialog, fallible, wasm_split_path = ::leptos::wasm_split)]
fn away_hint() -> Part {
    Ok(|| view! { <AwayHint /> }.into_any())
}

/// Out of office now, and this approval still the caller's to decide (the action is shown only then): an offer
/// to hand it on to the stand-in. Nothing while the answer is on its way, or when the caller is not away.
#[component]
fn AwayHint() -> impl IntoView {
    let ctx = use_app();
    let d = use_delegate();
    let away = RwSignal::new(None::<OutOfOffice>);
    // try_set: the page may be gone by the time the answer comes.
    leptos::task::spawn_local(async move {
        let _ = away.try_set(api::out_of_office().await.ok().flatten());
    });
    move || {
        let o = away.get().filter(|o| o.active)?;
        let t = ctx.texts().delegation;
        let until = time::absolute_str(&o.until, ctx.locale.get());
        let label = (t.ooo_delegate_to)(o.delegate.value());
        let to = o.delegate.clone();
        Some(view! {
            <div class="notice notice--info" data-testid="ooo-hint">
                <p>{(t.ooo_hint)(&until)}</p>
                <button type="button" class="button button--secondary" data-testid="ooo-delegate" on:click=move |_| d.open(Some(to.clone()))>
                    {label}
                </button>
            </div>
        })
    }
}

/// The dialog's own state, created with it (in its chunk).
#[derive(Clone, Copy)]
struct Dialog {
    kind: RwSignal<&'static str>,
    to: RwSignal<String>,
    note: RwSignal<String>,
    /// The text under the "who" field (nothing typed, or the worker's refusal).
    problem: RwSignal<Option<String>>,
    send: Action<(Principal, Option<String>), Result<DelegationView, ApiError>>,
    node: NodeRef<html::Dialog>,
}

impl Dialog {
    fn new(approval: ApprovalState, page: DelegateState) -> Self {
        let send = Action::new_local(move |(to, note): &(Principal, Option<String>)| {
            let (to, note, id) = (to.clone(), note.clone(), approval.id());
            async move {
                let result = api::delegate(&id, &to, note.as_deref()).await;
                if let Ok(done) = &result {
                    let _ = page.done.try_set(Some(done.to.clone()));
                    approval.approval.refetch();
                    focus_id("delegation-notices");
                }
                result
            }
        });
        Self {
            kind: RwSignal::new("email"),
            to: RwSignal::new(String::new()),
            note: RwSignal::new(String::new()),
            problem: RwSignal::new(None),
            send,
            node: NodeRef::new(),
        }
    }

    fn show(self, to: Option<Principal>) {
        if let Some(p) = to {
            self.kind.set(p.kind());
            self.to.set(p.value().to_owned());
        }
        self.problem.set(None);
        self.send.clear();
        if let Some(dialog) = self.node.get_untracked() {
            let _ = dialog.show_modal();
        }
    }

    fn close(self) {
        if let Some(dialog) = self.node.get_untracked() {
            dialog.close();
        }
    }

    /// `missing`: what to say when nobody is named.
    fn submit(self, missing: &str) {
        let value = self.to.get_untracked().trim().to_owned();
        let Some(to) = Principal::from_parts(self.kind.get_untracked(), &value).filter(|_| !value.is_empty()) else {
            self.problem.set(Some(missing.into()));
            focus_id("delegate-to");
            return;
        };
        let note = self.note.get_untracked();
        self.send.dispatch_local((to, (!note.trim().is_empty()).then_some(note)));
    }
}

#[component]
fn DelegateDialog() -> impl IntoView {
    let ctx = use_app();
    let page = use_delegate();
    let d = Dialog::new(use_approval(), page);
    // Each opening asked for on the page, once the dialog is in the document.
    Effect::new(move |_| {
        if d.node.get().is_some() {
            if let Some(to) = page.opening.get() {
                page.opening.set(None);
                d.show(to);
            }
        }
    });
    // A refusal stands under the "who" field; success closes the dialog.
    Effect::new(move |_| match d.send.value().get() {
        Some(Ok(_)) => d.close(),
        Some(Err(ApiError::Conflict(e))) => d.problem.set(Some(ctx.texts().delegation.refusal(e.error_code()).into())),
        Some(Err(ApiError::Invalid { message, .. })) => d.problem.set(Some(message)),
        Some(Err(e)) => d.problem.set(Some(format!("{} ({e})", ctx.texts().delegation.err_other))),
        None => {}
    });
    let invalid = move || d.problem.with(Option::is_some);
    view! {
        <dialog
            class="confirm delegate-dialog"
            node_ref=d.node
            aria-labelledby="delegate-title"
            aria-describedby="delegate-body"
            data-testid="delegate-dialog"
        >
            <h2 id="delegate-title" class="confirm__title">{tr(|t| t.delegation.dialog_title)}</h2>
            <p id="delegate-body">{tr(|t| t.delegation.dialog_body)}</p>
            <form class="form" novalidate on:submit=move |ev| {
                ev.prevent_default();
                d.submit(ctx.texts().delegation.to_required);
            }>
                <div class="field">
                    <label class="field__label" for="delegate-kind">{tr(|t| t.delegation.to_kind_label)}</label>
                    <select
                        id="delegate-kind"
                        class="input"
                        data-testid="delegate-kind"
                        prop:value=move || d.kind.get()
                        on:change=move |ev| {
                            let v = event_target_value(&ev);
                            d.kind.set(match v.as_str() { "sub" => "sub", "group" => "group", _ => "email" });
                        }
                    >
                        <option value="email">{tr(|t| t.delegation.kind_email)}</option>
                        <option value="sub">{tr(|t| t.delegation.kind_sub)}</option>
                        <option value="group">{tr(|t| t.delegation.kind_group)}</option>
                    </select>
                </div>
                <div class="field" class:field--invalid=invalid>
                    <label class="field__label" for="delegate-to">{tr(|t| t.delegation.to_label)}</label>
                    <input
                        id="delegate-to"
                        class="input"
                        autocomplete="off"
                        type=move || if d.kind.get() == "email" { "email" } else { "text" }
                        aria-describedby="delegate-to-help delegate-to-error"
                        aria-invalid=move || invalid().then_some("true")
                        prop:value=move || d.to.get()
                        on:input=move |ev| {
                            d.to.set(event_target_value(&ev));
                            d.problem.set(None);
                        }
                        data-testid="delegate-to"
                    />
                    <p id="delegate-to-help" class="field__help">{tr(|t| t.delegation.to_help)}</p>
                    <p id="delegate-to-error" class="field__error" role="alert" data-testid="delegate-error">
                        {move || d.problem.get()}
                    </p>
                </div>
                <NoteInput
                    id="delegate-note"
                    label=|t| t.delegation.note_label
                    value=d.note
                    help=|t| t.delegation.note_help
                />
                <div class="confirm__buttons">
                    <button type="button" class="button button--secondary" data-testid="delegate-cancel" on:click=move |_| d.close()>
                        {tr(|t| t.cancel)}
                    </button>
                    <button
                        type="submit"
                        class="button button--primary"
                        data-testid="delegate-confirm"
                        aria-disabled=move || d.send.pending().get().then_some("true")
                    >
                        {tr(|t| t.delegation.confirm)}
                    </button>
                </div>
            </form>
        </dialog>
    }
}

/// Where the caller's slot stands (the chain of hand-overs is below the form: `handovers`).
#[component]
pub fn DelegationNotices() -> impl IntoView {
    let ctx = use_app();
    let state = use_approval();
    let d = use_delegate();
    let notices = move || {
        let v = state.view.get()?;
        let t = ctx.texts().delegation;
        let seat = v.my_seat.clone();
        let mine = seat.delegated_to.as_ref().map(|to| {
            view! { <p class="notice notice--mine" data-testid="delegated-notice">{(t.delegated_notice)(to.value())}</p> }
        });
        let behalf = seat.on_behalf_of.as_ref().map(|of| {
            view! { <p class="notice notice--info" data-testid="on-behalf-notice">{(t.on_behalf_notice)(of.value())}</p> }
        });
        let done = d.done.get().map(|to| {
            view! { <p class="notice notice--approved" role="status" data-testid="delegate-done">{(t.done)(to.value())}</p> }
        });
        Some(view! {
            {done}
            {mine}
            {behalf}
        })
    };
    view! {
        <div id="delegation-notices" class="delegation-notices" tabindex="-1" data-testid="delegation-notices">
            {notices}
        </div>
    }
}
