//! `/a/{id}`: one approval request — what is asked, the feedback form, Approve / Reject behind a
//! confirmation, the outcome, and the history. Opening the page never decides anything (mail scanners
//! open links too): only the confirm button of the dialog sends a decision.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_params_map;
use ringi_core::approval::{ApprovalStatus, Verdict};
use ringi_core::decision::{DecisionRequest, COMMENT_MAX_CHARS};
use ringi_core::form::{text_limit, FieldKind};
use ringi_core::wire::{ApprovalView, AuditEntry, DecisionResponse};
use serde_json::{Map, Value};

use crate::api::{self, ApiError};
use crate::app::{focus_id, tr, use_app, use_title, use_title_tr, AppContext, Reauthenticate};
use crate::auth;
use crate::feedback::{self, Draft, FieldProblem, FieldState};
use crate::i18n::Texts;
use crate::inbox::{context_line, ProgressDots, StatusBadge};
use crate::storage;
use crate::time;

fn draft_key(id: &str) -> String {
    format!("ringi.draft.{id}")
}

#[derive(Clone, Debug, PartialEq)]
enum Load {
    Loading,
    Ready,
    NotFound,
    Failed(String),
    SignIn,
}

/// What became of the last decision attempt.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Done {
        verdict: Verdict,
        response: DecisionResponse,
    },
    /// 409 and friends: explained with the code, the view is reloaded.
    Conflict(String),
    NotFound,
    /// Network / 503: nothing decided, the form is kept, Retry sends the same decision again.
    Retry(Verdict, String),
    /// 400 without a known field, 413, 5xx.
    Failed(String),
    /// Some fields are wrong (client-side check or 400 with `field`).
    FixFields,
}

#[component]
pub fn ApprovalPage() -> impl IntoView {
    let ctx = use_app();
    let params = use_params_map();
    let id = Memo::new(move |_| params.read().get("id").unwrap_or_default());

    let view_sig = RwSignal::new(None::<ApprovalView>);
    let state = RwSignal::new(Load::Loading);
    let reloading = RwSignal::new(false);
    let fields = RwSignal::new(Vec::<FieldState>::new());
    let comment = RwSignal::new(String::new());
    let comment_problem = RwSignal::new(None::<FieldProblem>);
    let outcome = RwSignal::new(None::<Outcome>);
    let sending = RwSignal::new(false);
    let restored = RwSignal::new(false);
    let confirming = RwSignal::new(None::<Verdict>);
    let dialog = NodeRef::<html::Dialog>::new();

    use_title(move || {
        view_sig.with(|v| v.as_ref().map(|v| v.title.clone())).unwrap_or_else(|| ctx.texts().approval_title.into())
    });

    let load = move |initial: bool| {
        let id = id.get_untracked();
        reloading.set(true);
        spawn_local(async move {
            let result = api::approval(&id).await;
            reloading.set(false);
            match result {
                Ok(v) => {
                    if initial || fields.with_untracked(Vec::is_empty) {
                        let states: Vec<FieldState> = v.form.iter().cloned().map(FieldState::new).collect();
                        if let Some(draft) = storage::session_get_json::<Draft>(&draft_key(&id)) {
                            storage::session_remove(&draft_key(&id));
                            feedback::restore(&states, &draft);
                            comment.set(draft.comment);
                            restored.set(true);
                        }
                        fields.set(states);
                    }
                    view_sig.set(Some(v));
                    state.set(Load::Ready);
                }
                Err(ApiError::Unauthorized) => {
                    stash(&id, fields, comment);
                    state.set(Load::SignIn);
                }
                Err(ApiError::NotFound) => state.set(Load::NotFound),
                Err(e) => {
                    if view_sig.with_untracked(Option::is_none) {
                        state.set(Load::Failed(format!("{e:?}")));
                    }
                }
            }
        });
    };
    Effect::new(move |_| {
        id.track();
        state.set(Load::Loading);
        view_sig.set(None);
        fields.set(Vec::new());
        outcome.set(None);
        load(true);
    });

    // The status the user should see: a pending request past its expiry is over, even before the server
    // has marked it.
    let status = Memo::new(move |_| {
        view_sig.with(|v| {
            v.as_ref().map(|v| {
                let expired = time::parse(&v.expires_at).is_some_and(|ms| ms <= ctx.now.get());
                match v.status {
                    ApprovalStatus::Pending | ApprovalStatus::Claimed if expired => ApprovalStatus::Expired,
                    ApprovalStatus::Claimed => ApprovalStatus::Pending,
                    s => s,
                }
            })
        })
    });
    let can_decide = Memo::new(move |_| {
        status.get() == Some(ApprovalStatus::Pending)
            && view_sig.with(|v| v.as_ref().is_some_and(|v| v.my_decision.is_none()))
            && !matches!(outcome.get(), Some(Outcome::Done { .. }))
    });

    // "Please correct the marked fields" goes away once nothing is marked any more.
    Effect::new(move |_| {
        let marked = fields.with(|list| list.iter().any(|s| s.problem.with(Option::is_some)))
            || comment_problem.with(Option::is_some);
        if !marked && outcome.with_untracked(|o| o == &Some(Outcome::FixFields)) {
            outcome.set(None);
        }
    });

    let send = move |verdict: Verdict| {
        if sending.get_untracked() {
            return;
        }
        let Ok(feedback) = feedback::collect(&fields.get_untracked()) else {
            outcome.set(Some(Outcome::FixFields));
            focus_first_problem(fields, comment_problem);
            return;
        };
        let id = id.get_untracked();
        let text = comment.get_untracked();
        let request = DecisionRequest {
            decision: verdict,
            comment: (!text.trim().is_empty()).then_some(text),
            feedback: (!feedback.is_empty()).then_some(feedback),
        };
        sending.set(true);
        outcome.set(None);
        spawn_local(async move {
            let result = api::decide(&id, &request).await;
            sending.set(false);
            let next = match result {
                Ok(response) => {
                    storage::session_remove(&draft_key(&id));
                    restored.set(false);
                    load(false);
                    Outcome::Done { verdict, response }
                }
                Err(ApiError::Unauthorized) => {
                    // Keep what was typed, sign in again, come back to this page with the form refilled.
                    stash(&id, fields, comment);
                    state.set(Load::SignIn);
                    return;
                }
                Err(ApiError::NotFound) => Outcome::NotFound,
                Err(ApiError::Conflict { code, .. }) => {
                    load(false);
                    Outcome::Conflict(code)
                }
                Err(ApiError::Invalid { field, message }) => {
                    if place_field_error(field.as_deref(), &message, fields, comment_problem) {
                        focus_first_problem(fields, comment_problem);
                        Outcome::FixFields
                    } else {
                        Outcome::Failed(message)
                    }
                }
                Err(ApiError::Unavailable(m)) => Outcome::Retry(verdict, m),
                Err(ApiError::Server { status, message }) => Outcome::Failed(format!("HTTP {status}: {message}")),
            };
            // Field problems take focus to the first bad field; everything else to the announcement.
            if next != Outcome::FixFields {
                focus_id("decision-outcome");
            }
            outcome.set(Some(next));
        });
    };

    // Approve / Reject: check the form first, then ask for confirmation in a modal dialog.
    let ask = move |verdict: Verdict| {
        if feedback::collect(&fields.get_untracked()).is_err() || !comment_ok(comment, comment_problem) {
            outcome.set(Some(Outcome::FixFields));
            focus_first_problem(fields, comment_problem);
            return;
        }
        outcome.set(None);
        // The token may run out while the user reads: sign in again first, keeping the answers.
        if auth::bearer().is_none() {
            stash(&id.get_untracked(), fields, comment);
            state.set(Load::SignIn);
            return;
        }
        confirming.set(Some(verdict));
        if let Some(d) = dialog.get_untracked() {
            let _ = d.show_modal();
        }
    };
    let close_dialog = move || {
        if let Some(d) = dialog.get_untracked() {
            d.close();
        }
    };
    let confirm = move |_| {
        let verdict = confirming.get_untracked();
        close_dialog();
        if let Some(v) = verdict {
            send(v);
        }
    };

    view! {
        <div class="page approval" data-testid="approval-page">
            {move || match state.get() {
                Load::Loading => view! { <PageSkeleton /> }.into_any(),
                Load::SignIn => view! { <Reauthenticate /> }.into_any(),
                Load::NotFound => view! { <NotYours /> }.into_any(),
                Load::Failed(detail) => {
                    view! {
                        <section class="card card--error" role="alert" data-testid="approval-error">
                            <h1 class="page__title">{tr(|t| t.approval_title)}</h1>
                            <p>{tr(|t| t.err_load_failed)}</p>
                            <p class="card__detail"><code>{detail}</code></p>
                            <button
                                type="button"
                                class="button button--primary"
                                on:click=move |_| {
                                    state.set(Load::Loading);
                                    load(true);
                                }
                            >
                                {tr(|t| t.retry)}
                            </button>
                        </section>
                    }
                        .into_any()
                }
                Load::Ready => {
                    view! {
                        <Overview view_sig status reloading outcome />
                        <Outcomes outcome view_sig sending on_retry=send />
                        <Show when=move || restored.get() && can_decide.get()>
                            <p class="notice notice--info" role="status" data-testid="draft-restored">
                                {tr(|t| t.draft_restored)}
                            </p>
                        </Show>
                        <Body view_sig />
                        <Show when=move || can_decide.get()>
                            <DecisionForm fields comment comment_problem sending outcome on_decide=ask />
                        </Show>
                        <History view_sig />
                    }
                        .into_any()
                }
            }}
            <dialog
                class="confirm"
                node_ref=dialog
                aria-labelledby="confirm-title"
                aria-describedby="confirm-body"
                data-testid="confirm-dialog"
                on:close=move |_| confirming.set(None)
            >
                <h2 id="confirm-title" class="confirm__title">
                    {move || match confirming.get() {
                        Some(Verdict::Reject) => ctx.texts().confirm_reject_title,
                        _ => ctx.texts().confirm_approve_title,
                    }}
                </h2>
                <p class="confirm__what">{move || view_sig.with(|v| v.as_ref().map(|v| v.title.clone()))}</p>
                <p id="confirm-body">
                    {move || match confirming.get() {
                        Some(Verdict::Reject) => ctx.texts().confirm_reject_body,
                        _ => ctx.texts().confirm_approve_body,
                    }}
                </p>
                <div class="confirm__buttons">
                    <button
                        type="button"
                        class="button button--secondary"
                        data-testid="confirm-cancel"
                        autofocus
                        on:click=move |_| close_dialog()
                    >
                        {tr(|t| t.cancel)}
                    </button>
                    <button
                        type="button"
                        class=move || match confirming.get() {
                            Some(Verdict::Reject) => "button button--reject",
                            _ => "button button--approve",
                        }
                        data-testid="confirm-decision"
                        on:click=confirm
                    >
                        {move || match confirming.get() {
                            Some(Verdict::Reject) => ctx.texts().confirm_reject,
                            _ => ctx.texts().confirm_approve,
                        }}
                    </button>
                </div>
            </dialog>
        </div>
    }
}

fn stash(id: &str, fields: RwSignal<Vec<FieldState>>, comment: RwSignal<String>) {
    let draft = fields.with_untracked(|f| feedback::draft_of(f, &comment.get_untracked()));
    let empty = draft.comment.is_empty()
        && draft.text.values().all(|v| matches!(v, Value::String(s) if s.is_empty()) || v == &Value::Bool(false));
    if !empty {
        storage::session_set_json(&draft_key(id), &draft);
    }
}

fn comment_ok(comment: RwSignal<String>, problem: RwSignal<Option<FieldProblem>>) -> bool {
    let too_long = comment.with_untracked(|c| c.chars().count() > COMMENT_MAX_CHARS);
    problem.set(too_long.then_some(FieldProblem::TooLong(COMMENT_MAX_CHARS)));
    !too_long
}

/// A 400 naming `feedback.X` or `comment`: show the message next to that field. `false` when the field is
/// not on the page.
fn place_field_error(
    field: Option<&str>,
    message: &str,
    fields: RwSignal<Vec<FieldState>>,
    comment_problem: RwSignal<Option<FieldProblem>>,
) -> bool {
    let Some(field) = field else { return false };
    if field == "comment" {
        comment_problem.set(Some(FieldProblem::Server(message.to_owned())));
        return true;
    }
    let Some(name) = field.strip_prefix("feedback.") else { return false };
    fields.with_untracked(|list| match list.iter().find(|s| s.field.name == name) {
        Some(s) => {
            s.problem.set(Some(FieldProblem::Server(message.to_owned())));
            true
        }
        None => false,
    })
}

fn focus_first_problem(fields: RwSignal<Vec<FieldState>>, comment_problem: RwSignal<Option<FieldProblem>>) {
    let first = fields.with_untracked(|list| {
        list.iter().find(|s| s.problem.get_untracked().is_some()).map(|s| match s.field.kind {
            // A radio group: its first radio.
            FieldKind::Choice { ref options } if options.len() <= RADIO_MAX => format!("{}-0", s.dom_id()),
            _ => s.dom_id(),
        })
    });
    match first {
        Some(id) => focus_id(&id),
        None if comment_problem.get_untracked().is_some() => focus_id("comment"),
        None => {}
    }
}

/// Choices with at most this many options are radio buttons, longer ones a select.
const RADIO_MAX: usize = 5;

fn problem_text(t: &Texts, p: &FieldProblem) -> String {
    match p {
        FieldProblem::Required => t.field_required.into(),
        FieldProblem::TooLong(n) => (t.field_too_long)(*n),
        FieldProblem::NotAnOption => t.field_not_option.into(),
        FieldProblem::NotANumber => t.field_not_number.into(),
        FieldProblem::OutOfRange { min, max } => (t.field_out_of_range)(*min, *max),
        FieldProblem::Server(m) => format!("{} {m}", t.server_says),
    }
}

#[component]
fn PageSkeleton() -> impl IntoView {
    view! {
        <div class="card skeleton" data-testid="approval-loading">
            <p class="visually-hidden" role="status">{tr(|t| t.loading)}</p>
            <div class="skeleton__block skeleton__block--chip" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--title" aria-hidden="true"></div>
            <div class="skeleton__block" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--short" aria-hidden="true"></div>
        </div>
        <div class="card skeleton" aria-hidden="true">
            <div class="skeleton__block" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--short" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--button" aria-hidden="true"></div>
        </div>
    }
}

#[component]
fn NotYours() -> impl IntoView {
    use_title_tr(|t| t.err_not_found_title);
    view! {
        <section class="card" aria-labelledby="nf-title" data-testid="approval-not-found">
            <h1 id="nf-title" class="page__title">{tr(|t| t.err_not_found_title)}</h1>
            <p>{tr(|t| t.err_not_found_body)}</p>
            <p><a class="link" href="/">{tr(|t| t.back_to_inbox)}</a></p>
        </section>
    }
}

/// Title, status, who asked, when it runs out, progress, and what became of the request.
#[component]
fn Overview(
    view_sig: RwSignal<Option<ApprovalView>>,
    status: Memo<Option<ApprovalStatus>>,
    reloading: RwSignal<bool>,
    outcome: RwSignal<Option<Outcome>>,
) -> impl IntoView {
    let ctx = use_app();
    let v = move || view_sig.get();
    view! {
        {move || {
            let Some(v) = v() else { return ().into_any() };
            let st = status.get().unwrap_or(v.status);
            let info = context_line(&v.context);
            let expires_ms = time::parse(&v.expires_at);
            let expires_rel = move || {
                expires_ms.map(|ms| time::relative(ms, ctx.now.get(), ctx.locale.get())).unwrap_or_default()
            };
            let expires_abs = {
                let raw = v.expires_at.clone();
                move || time::absolute_str(&raw, ctx.locale.get())
            };
            let created_abs = {
                let raw = v.created_at.clone();
                move || time::absolute_str(&raw, ctx.locale.get())
            };
            let decided_abs = v.decided_at.clone().map(|raw| move || time::absolute_str(&raw, ctx.locale.get()));
            let urgency = move || match (st, expires_ms) {
                (ApprovalStatus::Pending, Some(ms)) => time::Urgency::of(ms, ctx.now.get()).class(),
                _ => "urgency",
            };
            let progress = v.progress;
            let decided = matches!(st, ApprovalStatus::Approved | ApprovalStatus::Rejected);
            // Right after deciding, the outcome message says it already.
            let just_decided = outcome.with(|o| matches!(o, Some(Outcome::Done { .. })));
            let mine = v.my_decision.clone().filter(|_| !just_decided);
            let expired_notice = {
                let raw = v.expires_at.clone();
                move || (ctx.texts().expired_notice)(&time::absolute_str(&raw, ctx.locale.get()))
            };
            view! {
                <header class="card approval__head" aria-busy=move || reloading.get().to_string()>
                    <div class="approval__badges">
                        <StatusBadge status=st verdict=v.verdict />
                    </div>
                    <h1 id="approval-title" class="page__title" data-testid="approval-title">{v.title.clone()}</h1>
                    <dl class="facts">
                        {info
                            .requested_by
                            .clone()
                            .map(|who| {
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.requested_by)}</dt>
                                        <dd>{who}</dd>
                                    </div>
                                }
                            })}
                        {v
                            .registered_by
                            .clone()
                            .map(|by| {
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.registered_by)}</dt>
                                        <dd data-testid="registered-by">{by}</dd>
                                    </div>
                                }
                            })}
                        {info
                            .execution_arn
                            .clone()
                            .map(|arn| {
                                let shown = match (&info.machine, &info.execution) {
                                    (Some(m), Some(e)) => format!("{m} / {e}"),
                                    _ => arn.clone(),
                                };
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.execution)}</dt>
                                        <dd>
                                            <code class="facts__code" title=arn>{shown}</code>
                                        </dd>
                                    </div>
                                }
                            })}
                        {info
                            .step
                            .clone()
                            .map(|s| {
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.step)}</dt>
                                        <dd>{s}</dd>
                                    </div>
                                }
                            })}
                        <div class="facts__row">
                            <dt>{tr(|t| t.created_label)}</dt>
                            <dd>{created_abs}</dd>
                        </div>
                        {(!decided)
                            .then(|| {
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.expires_label)}</dt>
                                        <dd>
                                            <span class=urgency data-testid="expires">
                                                <time datetime=v.expires_at.clone()>{expires_abs}</time>
                                                " ("
                                                {expires_rel}
                                                ")"
                                            </span>
                                        </dd>
                                    </div>
                                }
                            })}
                        {decided_abs
                            .map(|d| {
                                view! {
                                    <div class="facts__row">
                                        <dt>{tr(|t| t.decided_label)}</dt>
                                        <dd>{d}</dd>
                                    </div>
                                }
                            })}
                        <div class="facts__row">
                            <dt>{tr(|t| t.approvals_label)}</dt>
                            <dd>
                                <ProgressDots progress />
                            </dd>
                        </div>
                    </dl>
                </header>
                {(st == ApprovalStatus::DecidedUnconfirmed)
                    .then(|| {
                        let approve = v.verdict != Some(Verdict::Reject);
                        let by = v.attempted_by.clone().unwrap_or_default();
                        view! {
                            <p class="notice notice--unconfirmed" role="status" data-testid="unconfirmed-notice">
                                {move || (ctx.texts().unconfirmed_notice)(approve, &by)}
                            </p>
                        }
                    })}
                {(st == ApprovalStatus::Expired)
                    .then(|| {
                        view! {
                            <p class="notice notice--expired" data-testid="expired-notice">
                                {expired_notice.clone()}
                            </p>
                        }
                    })}
                // Someone else's decision; the caller's own is told by <MyDecision>.
                {(decided && v.my_decision.is_none())
                    .then(|| {
                        view! {
                            <p
                                class=if st == ApprovalStatus::Approved {
                                    "notice notice--approved"
                                } else {
                                    "notice notice--rejected"
                                }
                                data-testid="decided-notice"
                            >
                                {move || {
                                    if st == ApprovalStatus::Approved {
                                        ctx.texts().decided_notice_approved
                                    } else {
                                        ctx.texts().decided_notice_rejected
                                    }
                                }}
                            </p>
                        }
                    })}
                {mine.map(|mine| view! { <MyDecision mine status=st progress /> })}
            }
                .into_any()
        }}
    }
}

/// What is asked: the summary (plain text) and the details (a field list).
#[component]
fn Body(view_sig: RwSignal<Option<ApprovalView>>) -> impl IntoView {
    let ctx = use_app();
    move || {
        let Some((summary, details)) = view_sig.with(|v| v.as_ref().map(|v| (v.summary.clone(), v.details.clone())))
        else {
            return ().into_any();
        };
        view! {
                {(!summary.trim().is_empty())
                    .then(|| {
                        view! {
                            <section class="card" aria-labelledby="summary-title">
                                <h2 id="summary-title" class="card__title">{tr(|t| t.summary_heading)}</h2>
                                // Plain text: never parsed as markup.
                                <p class="summary" data-testid="summary">{summary.clone()}</p>
                            </section>
                        }
                    })}
                {(!details.is_empty())
                    .then(|| {
                        view! {
                            <section class="card" aria-labelledby="details-title">
                                <h2 id="details-title" class="card__title">{tr(|t| t.details_heading)}</h2>
                                <div data-testid="details">{move || object_view(&details, ctx.texts(), 0)}</div>
                            </section>
                        }
                    })}
        }
        .into_any()
    }
}

#[component]
fn MyDecision(mine: AuditEntry, status: ApprovalStatus, progress: ringi_core::wire::Progress) -> impl IntoView {
    let ctx = use_app();
    let at = mine.at.clone();
    let approve = mine.decision == "approve";
    let text = move || {
        let when = time::absolute_str(&at, ctx.locale.get());
        if approve {
            (ctx.texts().you_approved)(&when)
        } else {
            (ctx.texts().you_rejected)(&when)
        }
    };
    let waiting = approve && status == ApprovalStatus::Pending;
    view! {
        <div class="notice notice--mine" data-testid="my-decision">
            <p>{text}</p>
            {waiting
                .then(|| {
                    view! {
                        <p>{move || (ctx.texts().waiting_for_others)(progress.approvals, progress.required)}</p>
                    }
                })}
        </div>
    }
}

/// A JSON object as a definition list; nested objects and arrays collapse into `<details>`.
fn object_view(map: &Map<String, Value>, t: &'static Texts, depth: usize) -> AnyView {
    let rows: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    rows_view(&rows, t, depth)
}

fn rows_view(rows: &[(String, Value)], t: &'static Texts, depth: usize) -> AnyView {
    let rows = rows
        .iter()
        .map(|(k, v)| {
            view! {
                <div class="kv__row">
                    <dt>{k.clone()}</dt>
                    <dd>{value_view(v, t, depth)}</dd>
                </div>
            }
        })
        .collect_view();
    view! { <dl class="kv">{rows}</dl> }.into_any()
}

fn value_view(v: &Value, t: &'static Texts, depth: usize) -> AnyView {
    // Deeply nested data is shown as JSON text rather than more boxes.
    if depth >= 6 && (v.is_object() || v.is_array()) {
        return view! { <code class="kv__json">{v.to_string()}</code> }.into_any();
    }
    match v {
        Value::Object(m) if !m.is_empty() => view! {
            <details class="tree" open=depth == 0 && m.len() <= 4>
                <summary>{(t.items)(m.len())}</summary>
                {object_view(m, t, depth + 1)}
            </details>
        }
        .into_any(),
        Value::Array(a) if !a.is_empty() => {
            let entries = a.iter().map(|item| view! { <li>{value_view(item, t, depth + 1)}</li> }).collect_view();
            view! {
                <details class="tree" open=depth == 0 && a.len() <= 4>
                    <summary>{(t.items)(a.len())}</summary>
                    <ol class="tree__list">{entries}</ol>
                </details>
            }
            .into_any()
        }
        Value::Object(_) | Value::Array(_) | Value::Null => {
            view! { <span class="kv__empty">{t.empty_value}</span> }.into_any()
        }
        Value::String(s) if s.is_empty() => view! { <span class="kv__empty">{t.empty_value}</span> }.into_any(),
        Value::String(s) => view! { <span class="kv__text">{s.clone()}</span> }.into_any(),
        Value::Bool(b) => view! { <span>{if *b { t.yes } else { t.no }}</span> }.into_any(),
        Value::Number(n) => view! { <span class="kv__number">{n.to_string()}</span> }.into_any(),
    }
}

/// The feedback fields, the comment, and the two buttons.
#[component]
fn DecisionForm(
    fields: RwSignal<Vec<FieldState>>,
    comment: RwSignal<String>,
    comment_problem: RwSignal<Option<FieldProblem>>,
    sending: RwSignal<bool>,
    outcome: RwSignal<Option<Outcome>>,
    on_decide: impl Fn(Verdict) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    // Approve and Reject differ only in verdict, look and label; both only open the confirmation step.
    let decide_button = move |verdict: Verdict| {
        let (class, testid, icon, label) = match verdict {
            Verdict::Approve => ("button button--approve", "approve", "✓ ", tr(|t| t.approve)),
            Verdict::Reject => ("button button--reject", "reject", "✕ ", tr(|t| t.reject)),
        };
        view! {
            <button
                type="button"
                class=class
                data-testid=testid
                aria-disabled=move || sending.get().to_string()
                on:click=move |_| {
                    if !sending.get_untracked() {
                        on_decide(verdict)
                    }
                }
            >
                <span aria-hidden="true">{icon}</span>
                {label}
            </button>
        }
    };
    let ctx = use_app();
    view! {
        <section class="card decide" aria-labelledby="decide-title" data-testid="decision-form">
            <h2 id="decide-title" class="card__title">{tr(|t| t.form_heading)}</h2>
            <form class="form" novalidate on:submit=|ev| ev.prevent_default()>
                <For each=move || fields.get() key=|s| s.field.name.clone() let:state>
                    <Field state />
                </For>
                <div class="field" class:field--invalid=move || comment_problem.with(Option::is_some)>
                    <label class="field__label" for="comment">{tr(|t| t.comment_label)}</label>
                    <textarea
                        id="comment"
                        name="comment"
                        class="input input--area"
                        rows="3"
                        maxlength=COMMENT_MAX_CHARS.to_string()
                        aria-describedby="comment-help comment-error"
                        aria-invalid=move || comment_problem.with(Option::is_some).then_some("true")
                        prop:value=move || comment.get()
                        on:input=move |ev| {
                            comment.set(event_target_value(&ev));
                            comment_problem.set(None);
                        }
                        data-testid="comment"
                    ></textarea>
                    <p id="comment-help" class="field__help">{tr(|t| t.comment_help)}</p>
                    <p id="comment-error" class="field__error">
                        {move || comment_problem.get().map(|p| problem_text(ctx.texts(), &p))}
                    </p>
                </div>
                <Show when=move || outcome.with(|o| o == &Some(Outcome::FixFields))>
                    <p class="notice notice--error" role="alert" data-testid="decision-error" data-code="fields">
                        {tr(|t| t.err_fix_fields)}
                    </p>
                </Show>
                <div class="decide__buttons">
                    {decide_button(Verdict::Approve)}
                    {decide_button(Verdict::Reject)}
                </div>
                <p class="decide__hint">{tr(|t| t.decide_hint)}</p>
            </form>
        </section>
    }
}

#[component]
fn Field(state: FieldState) -> impl IntoView {
    let ctx = use_app();
    let f = state.field.clone();
    let id = state.dom_id();
    let help_id = format!("{id}-help");
    let error_id = format!("{id}-error");
    let describedby = format!("{help_id} {error_id}");
    let problem = state.problem;
    let text = state.text;
    let checked = state.checked;
    let invalid = move || problem.with(Option::is_some).then_some("true");
    let required = f.required;
    let required_attr = required.then_some("true");
    let limit_help = match &f.kind {
        FieldKind::Text { max_length } | FieldKind::Textarea { max_length } => {
            Some(Limit::Chars(text_limit(*max_length)))
        }
        FieldKind::Number { min, max } if min.is_some() || max.is_some() => Some(Limit::Range(*min, *max)),
        _ => None,
    };
    let help = f.help.clone();
    let help_text = move || {
        let t = ctx.texts();
        let limit = limit_help.map(|l| match l {
            Limit::Chars(n) => (t.max_chars)(n),
            Limit::Range(a, b) => (t.range)(a, b),
        });
        match (help.clone(), limit) {
            (Some(h), Some(l)) => format!("{h} {l}"),
            (Some(h), None) => h,
            (None, Some(l)) => l,
            (None, None) => String::new(),
        }
    };
    let on_text = move |ev: leptos::ev::Event| {
        text.set(event_target_value(&ev));
        problem.set(None);
    };
    let label = f.label.clone();
    let required_mark = move || required.then(|| view! { <span class="field__required">{tr(|t| t.required)}</span> });
    let control = match f.kind.clone() {
        FieldKind::Text { max_length } => view! {
            <input
                id=id.clone()
                name=f.name.clone()
                type="text"
                class="input"
                autocomplete="off"
                maxlength=text_limit(max_length).to_string()
                aria-required=required_attr
                aria-invalid=invalid
                aria-describedby=describedby.clone()
                prop:value=move || text.get()
                on:input=on_text
            />
        }
        .into_any(),
        FieldKind::Textarea { max_length } => view! {
            <textarea
                id=id.clone()
                name=f.name.clone()
                class="input input--area"
                rows="4"
                maxlength=text_limit(max_length).to_string()
                aria-required=required_attr
                aria-invalid=invalid
                aria-describedby=describedby.clone()
                prop:value=move || text.get()
                on:input=on_text
            ></textarea>
        }
        .into_any(),
        FieldKind::Number { min, max } => view! {
            <input
                id=id.clone()
                name=f.name.clone()
                type="number"
                class="input input--number"
                inputmode="decimal"
                step="any"
                min=min.map(|m| m.to_string())
                max=max.map(|m| m.to_string())
                aria-required=required_attr
                aria-invalid=invalid
                aria-describedby=describedby.clone()
                prop:value=move || text.get()
                on:input=on_text
            />
        }
        .into_any(),
        FieldKind::Boolean => view! {
            <input
                id=id.clone()
                name=f.name.clone()
                type="checkbox"
                class="checkbox"
                aria-invalid=invalid
                aria-describedby=describedby.clone()
                prop:checked=move || checked.get()
                on:change=move |ev| {
                    checked.set(event_target_checked(&ev));
                    problem.set(None);
                }
            />
        }
        .into_any(),
        FieldKind::Choice { options } if options.len() <= RADIO_MAX => {
            let radios = options
                .into_iter()
                .enumerate()
                .map(|(i, opt)| {
                    let rid = format!("{id}-{i}");
                    let rid_for = rid.clone();
                    let value = opt.clone();
                    let is_on = opt.clone();
                    let opt_value = opt.clone();
                    view! {
                        <label class="radio" for=rid_for>
                            <input
                                id=rid
                                type="radio"
                                name=id.clone()
                                value=opt_value
                                prop:checked=move || text.with(|t| *t == is_on)
                                on:change=move |_| {
                                    text.set(value.clone());
                                    problem.set(None);
                                }
                            />
                            <span>{opt}</span>
                        </label>
                    }
                })
                .collect_view();
            view! {
                <div
                    class="radios"
                    role="radiogroup"
                    aria-labelledby=format!("{id}-label")
                    aria-required=required_attr
                    aria-invalid=invalid
                    aria-describedby=describedby.clone()
                >
                    {radios}
                </div>
            }
            .into_any()
        }
        FieldKind::Choice { options } => {
            let opts = options
                .into_iter()
                .map(|opt| {
                    let sel = opt.clone();
                    let opt_value = opt.clone();
                    view! {
                        <option value=opt_value prop:selected=move || text.with(|t| *t == sel)>
                            {opt}
                        </option>
                    }
                })
                .collect_view();
            view! {
                <select
                    id=id.clone()
                    name=f.name.clone()
                    class="input input--select"
                    aria-required=required_attr
                    aria-invalid=invalid
                    aria-describedby=describedby.clone()
                    on:change=on_text
                >
                    <option value="" prop:selected=move || text.with(String::is_empty)>
                        {tr(|t| t.choose)}
                    </option>
                    {opts}
                </select>
            }
            .into_any()
        }
    };
    let is_radio = matches!(&f.kind, FieldKind::Choice { options } if options.len() <= RADIO_MAX);
    let is_check = matches!(f.kind, FieldKind::Boolean);
    let label_view = if is_radio {
        // A radio group is labelled by this text (aria-labelledby); each radio has its own <label>.
        view! {
            <p class="field__label" id=format!("{id}-label")>
                {label.clone()}
                {required_mark}
            </p>
        }
        .into_any()
    } else {
        view! {
            <label class="field__label" for=id.clone() id=format!("{id}-label")>
                {label.clone()}
                {required_mark}
            </label>
        }
        .into_any()
    };
    view! {
        <div
            class="field"
            class:field--invalid=move || problem.with(Option::is_some)
            class:field--check=is_check
            data-testid=format!("field-{}", f.name)
        >
            {if is_check {
                view! {
                    {control}
                    {label_view}
                }
                    .into_any()
            } else {
                view! {
                    {label_view}
                    {control}
                }
                    .into_any()
            }}
            <p id=help_id class="field__help">{help_text}</p>
            <p id=error_id class="field__error">{move || problem.get().map(|p| problem_text(ctx.texts(), &p))}</p>
        </div>
    }
}

#[derive(Clone, Copy)]
enum Limit {
    Chars(usize),
    Range(Option<f64>, Option<f64>),
}

/// The result of the last decision attempt, announced (status for success, alert for problems).
#[component]
fn Outcomes(
    outcome: RwSignal<Option<Outcome>>,
    view_sig: RwSignal<Option<ApprovalView>>,
    sending: RwSignal<bool>,
    on_retry: impl Fn(Verdict) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let ctx = use_app();
    let _ = view_sig;
    view! {
        <div id="decision-outcome" class="outcome" tabindex="-1" data-testid="decision-outcome">
            <Show when=move || sending.get()>
                <p class="notice notice--info notice--sending" role="status" data-testid="sending">
                    <span class="spinner" aria-hidden="true"></span>
                    {tr(|t| t.sending)}
                </p>
            </Show>
            {move || {
                let t = ctx.texts();
                match outcome.get() {
                    None => ().into_any(),
                    Some(Outcome::Done { verdict, response }) => {
                        let text = match (verdict, response.status) {
                            (_, ApprovalStatus::DecidedUnconfirmed) => {
                                (t.result_unconfirmed)(response.verdict != Some(Verdict::Reject))
                            }
                            (Verdict::Reject, _) => t.result_rejected.to_owned(),
                            (Verdict::Approve, ApprovalStatus::Approved) => t.result_approved.to_owned(),
                            (Verdict::Approve, _) => {
                                (t.result_recorded)(response.progress.approvals, response.progress.required)
                            }
                        };
                        let class = if response.status == ApprovalStatus::DecidedUnconfirmed {
                            "notice notice--unconfirmed notice--big"
                        } else if verdict == Verdict::Approve {
                            "notice notice--approved notice--big"
                        } else {
                            "notice notice--rejected notice--big"
                        };
                        view! {
                            <p class=class role="status" data-testid="decision-result" data-result=response.status.as_str()>
                                <span class="notice__icon" aria-hidden="true">
                                    {if verdict == Verdict::Approve { "✓" } else { "✕" }}
                                </span>
                                {text}
                            </p>
                        }
                            .into_any()
                    }
                    Some(Outcome::Conflict(code)) => {
                        let text = match code.as_str() {
                            "already_decided" => t.err_already_decided,
                            "expired" => t.err_expired,
                            "in_progress" => t.err_in_progress,
                            "already_voted" => t.err_already_voted,
                            "already_satisfied" => t.err_already_satisfied,
                            _ => t.err_conflict,
                        };
                        view! {
                            <p class="notice notice--error" role="alert" data-testid="decision-error" data-code=code>
                                {text}
                            </p>
                        }
                            .into_any()
                    }
                    Some(Outcome::NotFound) => view! {
                        <p class="notice notice--error" role="alert" data-testid="decision-error" data-code="not_found">
                            {t.err_not_found_body}
                        </p>
                    }
                        .into_any(),
                    Some(Outcome::Retry(verdict, detail)) => view! {
                        <div class="notice notice--error" role="alert" data-testid="decision-error" data-code="unavailable">
                            <p>{t.err_unavailable}</p>
                            <p class="card__detail"><code>{detail}</code></p>
                            <button
                                type="button"
                                class="button button--primary"
                                data-testid="retry"
                                aria-disabled=move || sending.get().to_string()
                                on:click=move |_| on_retry(verdict)
                            >
                                {move || if sending.get() { ctx.texts().sending } else { ctx.texts().retry }}
                            </button>
                        </div>
                    }
                        .into_any(),
                    Some(Outcome::Failed(detail)) => view! {
                        <div class="notice notice--error" role="alert" data-testid="decision-error" data-code="failed">
                            <p>{t.err_server}</p>
                            <p class="card__detail"><code>{detail}</code></p>
                        </div>
                    }
                        .into_any(),
                    // Shown in the form, next to the buttons (see DecisionForm).
                    Some(Outcome::FixFields) => ().into_any(),
                }
            }}
        </div>
    }
}

/// The audit trail: every recorded decision with its comment and feedback.
#[component]
fn History(view_sig: RwSignal<Option<ApprovalView>>) -> impl IntoView {
    let ctx = use_app();
    move || {
        let decisions = view_sig.with(|v| v.as_ref().map(|v| v.decisions.clone()).unwrap_or_default());
        // Feedback is shown under the form's labels, in the form's order.
        let labels: Vec<(String, String)> = view_sig.with(|v| {
            v.as_ref().map(|v| v.form.iter().map(|f| (f.name.clone(), f.label.clone())).collect()).unwrap_or_default()
        });
        let status = view_sig.with(|v| v.as_ref().map(|v| v.status));
        if decisions.is_empty() && !status.is_some_and(ApprovalStatus::is_final) {
            return ().into_any();
        }
        view! {
            <section class="card" aria-labelledby="history-title" data-testid="history">
                <h2 id="history-title" class="card__title">{tr(|t| t.audit_heading)}</h2>
                {if decisions.is_empty() {
                    view! { <p class="muted">{tr(|t| t.audit_empty)}</p> }.into_any()
                } else {
                    view! {
                        <ol class="audit">
                            {decisions.into_iter().map(|d| audit_entry(ctx, d, &labels)).collect_view()}
                        </ol>
                    }
                        .into_any()
                }}
            </section>
        }
        .into_any()
    }
}

fn audit_entry(ctx: AppContext, d: AuditEntry, labels: &[(String, String)]) -> impl IntoView {
    let approve = d.decision == "approve";
    let at = d.at.clone();
    let when = move || time::absolute_str(&at, ctx.locale.get());
    let verb = move || if approve { ctx.texts().audit_approved } else { ctx.texts().audit_rejected };
    let feedback = d.feedback.clone().filter(|f| !f.is_empty()).map(|f| {
        let mut rows: Vec<(String, Value)> =
            labels.iter().filter_map(|(name, label)| f.get(name).map(|v| (label.clone(), v.clone()))).collect();
        rows.extend(
            f.iter().filter(|(k, _)| !labels.iter().any(|(name, _)| name == *k)).map(|(k, v)| (k.clone(), v.clone())),
        );
        rows
    });
    view! {
        <li class="audit__entry" class:audit__entry--approve=approve class:audit__entry--reject=!approve data-testid="audit-entry">
            <p class="audit__line">
                <span class="audit__mark" aria-hidden="true">{if approve { "✓" } else { "✕" }}</span>
                <strong class="audit__who">{d.by.clone()}</strong>
                " "
                <span class="audit__verb">{verb}</span>
                " · "
                <time datetime=d.at.clone()>{when}</time>
            </p>
            {d.comment.clone().filter(|c| !c.is_empty()).map(|c| view! { <p class="audit__comment">{c}</p> })}
            {feedback
                .map(|f| {
                    view! {
                        <div class="audit__feedback">
                            <p class="audit__label">{tr(|t| t.feedback_label)}</p>
                            {move || rows_view(&f, ctx.texts(), 1)}
                        </div>
                    }
                })}
        </li>
    }
}
