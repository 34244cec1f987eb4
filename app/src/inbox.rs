//! `/` (and `/?tab=decided`): the caller's approvals, pending or decided, cursor-paginated.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_query_map;
use ringi_core::approval::{ApprovalStatus, Verdict};
use ringi_core::wire::{InboxItem, Progress};
use serde_json::{Map, Value};

use crate::api::{self, ApiError};
use crate::app::{tr, use_app, use_title_tr, AppContext, Reauthenticate};
use crate::i18n::Texts;
use crate::time::{self, Urgency};

#[derive(Clone, Debug, PartialEq)]
enum Load {
    /// First load of this tab: skeleton.
    Loading,
    Ready,
    Failed(String),
    /// The token was refused or ran out: sign in again.
    SignIn,
}

#[component]
pub fn Inbox() -> impl IntoView {
    let ctx = use_app();
    let query = use_query_map();
    let decided = Memo::new(move |_| query.read().get("tab").as_deref() == Some("decided"));
    let items = RwSignal::new(Vec::<InboxItem>::new());
    let cursor = RwSignal::new(None::<String>);
    let state = RwSignal::new(Load::Loading);
    let busy = RwSignal::new(false);
    let more_busy = RwSignal::new(false);
    let more_failed = RwSignal::new(false);
    // Answers for a tab the user has left are dropped.
    let generation = StoredValue::new(0u32);
    use_title_tr(|t| t.inbox_title);

    let load = move |append: bool| {
        let tab = decided.get_untracked();
        let after = if append { cursor.get_untracked() } else { None };
        if append {
            more_busy.set(true);
            more_failed.set(false);
        } else {
            generation.update_value(|g| *g += 1);
            busy.set(true);
        }
        let mine = generation.get_value();
        spawn_local(async move {
            let result = api::inbox(tab, after.as_deref()).await;
            if generation.get_value() != mine {
                return;
            }
            busy.set(false);
            more_busy.set(false);
            match result {
                Ok(page) => {
                    if append {
                        items.update(|list| list.extend(page.items));
                    } else {
                        items.set(page.items);
                    }
                    cursor.set(page.next_cursor);
                    state.set(Load::Ready);
                }
                Err(ApiError::Unauthorized) => state.set(Load::SignIn),
                Err(e) if append => {
                    leptos::logging::warn!("ringi: inbox: {e:?}");
                    more_failed.set(true);
                }
                Err(e) => state.set(Load::Failed(describe(&e))),
            }
        });
    };

    // (Re)load whenever the tab changes.
    Effect::new(move |_| {
        decided.track();
        state.set(Load::Loading);
        items.set(Vec::new());
        cursor.set(None);
        load(false);
    });

    let count_text = move || {
        let t = ctx.texts();
        if state.get() != Load::Ready {
            return String::new();
        }
        let n = items.with(Vec::len);
        let more = cursor.with(Option::is_some);
        if decided.get() {
            (t.count_decided)(n, more)
        } else {
            (t.count_pending)(n, more)
        }
    };

    view! {
        <section class="page inbox" aria-labelledby="inbox-title" data-testid="inbox-page">
            <div class="page__head">
                <h1 id="inbox-title" class="page__title">{tr(|t| t.inbox_title)}</h1>
                <button
                    type="button"
                    class="button button--ghost refresh"
                    data-testid="refresh"
                    aria-disabled=move || busy.get().to_string()
                    on:click=move |_| {
                        if !busy.get_untracked() {
                            load(false);
                        }
                    }
                >
                    <span class="refresh__icon" class:refresh__icon--spin=move || busy.get() aria-hidden="true">
                        "↻"
                    </span>
                    <span>{move || if busy.get() { ctx.texts().refreshing } else { ctx.texts().refresh }}</span>
                </button>
            </div>
            <nav class="tabs" aria-label=tr(|t| t.inbox_tabs_label)>
                <a
                    class="tabs__tab"
                    href="/"
                    data-testid="tab-pending"
                    aria-current=move || (!decided.get()).then_some("page")
                >
                    {tr(|t| t.tab_pending)}
                </a>
                <a
                    class="tabs__tab"
                    href="/?tab=decided"
                    data-testid="tab-decided"
                    aria-current=move || decided.get().then_some("page")
                >
                    {tr(|t| t.tab_decided)}
                </a>
            </nav>
            <p class="inbox__count" role="status" data-testid="inbox-count">{count_text}</p>
            {move || match state.get() {
                Load::Loading => view! { <ListSkeleton /> }.into_any(),
                Load::SignIn => view! { <Reauthenticate /> }.into_any(),
                Load::Failed(detail) => {
                    view! {
                        <div class="card card--error inbox__error" role="alert" data-testid="inbox-error">
                            <h2 class="card__title">{tr(|t| t.inbox_error_title)}</h2>
                            <p>{tr(|t| t.err_load_failed)}</p>
                            <p class="card__detail"><code>{detail}</code></p>
                            <button type="button" class="button button--primary" on:click=move |_| load(false)>
                                {tr(|t| t.retry)}
                            </button>
                        </div>
                    }
                        .into_any()
                }
                Load::Ready => view! { <List items decided /> }.into_any(),
            }}
            <Show when=move || state.get() == Load::Ready && cursor.with(Option::is_some)>
                <button
                    type="button"
                    class="button button--secondary inbox__more"
                    data-testid="load-more"
                    aria-disabled=move || more_busy.get().to_string()
                    on:click=move |_| {
                        if !more_busy.get_untracked() {
                            load(true);
                        }
                    }
                >
                    {move || if more_busy.get() { ctx.texts().loading_more } else { ctx.texts().load_more }}
                </button>
                <Show when=move || more_failed.get()>
                    <p class="notice notice--error" role="alert">{tr(|t| t.err_load_failed)}</p>
                </Show>
            </Show>
        </section>
    }
}

fn describe(e: &ApiError) -> String {
    match e {
        ApiError::Unavailable(m) => format!("network: {m}"),
        ApiError::Server { status, message } => format!("HTTP {status}: {message}"),
        other => format!("{other:?}"),
    }
}

#[component]
fn List(items: RwSignal<Vec<InboxItem>>, decided: Memo<bool>) -> impl IntoView {
    let ctx = use_app();
    view! {
        <Show
            when=move || items.with(|l| !l.is_empty())
            fallback=move || {
                view! {
                    <div class="empty" data-testid="inbox-empty">
                        <span class="empty__mark" aria-hidden="true">"✓"</span>
                        <h2 class="empty__title">
                            {move || {
                                if decided.get() {
                                    ctx.texts().empty_decided_title
                                } else {
                                    ctx.texts().empty_pending_title
                                }
                            }}
                        </h2>
                        <p>
                            {move || {
                                if decided.get() { ctx.texts().empty_decided_body } else { ctx.texts().empty_pending_body }
                            }}
                        </p>
                    </div>
                }
            }
        >
            <ul class="items" data-testid="inbox-list">
                <For each=move || items.get() key=|item| (item.id.clone(), item.status.as_str()) let:item>
                    <Item item />
                </For>
            </ul>
        </Show>
    }
}

#[component]
fn Item(item: InboxItem) -> impl IntoView {
    let ctx = use_app();
    let href = format!("/a/{}", item.id);
    let title_id = format!("item-{}", item.id);
    let context = context_line(&item.context);
    let expires_ms = time::parse(&item.expires_at);
    let decided_ms = item.decided_at.as_deref().and_then(time::parse);
    let status = item.status;
    let progress = item.progress;
    let summary = first_line(&item.summary);
    let expires_attr = item.expires_at.clone();
    let when = move || when_text(ctx, status, expires_ms, decided_ms);
    let urgency = move || match (status, expires_ms) {
        (ApprovalStatus::Pending | ApprovalStatus::Claimed, Some(ms)) => Urgency::of(ms, ctx.now.get()).class(),
        _ => "urgency",
    };
    let absolute = move || expires_ms.map(|ms| time::absolute(ms, ctx.locale.get())).unwrap_or_default();
    view! {
        <li class="item" data-testid="inbox-item" data-id=item.id.clone()>
            <div class="item__top">
                <StatusBadge status verdict=item.verdict />
                <span class=urgency>
                    <time datetime=expires_attr title=absolute>{when}</time>
                </span>
            </div>
            <h2 class="item__title" id=title_id>
                <a class="item__link" href=href>{item.title.clone()}</a>
            </h2>
            <Show when={
                let empty = summary.is_empty();
                move || !empty
            }>
                <p class="item__summary">{summary.clone()}</p>
            </Show>
            <div class="item__bottom">
                <ContextLine context=context.clone() />
                // Decided: the status says it all, unless several approvals were needed.
                {(matches!(status, ApprovalStatus::Pending | ApprovalStatus::Claimed) || progress.required > 1)
                    .then(|| view! { <ProgressDots progress /> })}
            </div>
        </li>
    }
}

fn when_text(ctx: AppContext, status: ApprovalStatus, expires_ms: Option<f64>, decided_ms: Option<f64>) -> String {
    let t = ctx.texts();
    let now = ctx.now.get();
    let locale = ctx.locale.get();
    match status {
        ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::DecidedUnconfirmed => {
            decided_ms.map(|ms| (t.decided_when)(&time::relative(ms, now, locale))).unwrap_or_default()
        }
        _ => match expires_ms {
            Some(ms) if ms <= now || status == ApprovalStatus::Expired => {
                (t.expired_when)(&time::relative(ms, now, locale))
            }
            Some(ms) => (t.expires)(&time::relative(ms, now, locale)),
            None => String::new(),
        },
    }
}

fn first_line(summary: &str) -> String {
    summary.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_owned()
}

/// What the request came from: `requestedBy`, the state machine (from `executionArn`) and the step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContextInfo {
    pub requested_by: Option<String>,
    pub machine: Option<String>,
    pub execution: Option<String>,
    pub execution_arn: Option<String>,
    pub step: Option<String>,
}

pub fn context_line(context: &Map<String, Value>) -> ContextInfo {
    let s = |k: &str| context.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
    let arn = s("executionArn");
    // arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME
    let (machine, execution) = match arn.as_deref().map(|a| a.split(':').collect::<Vec<_>>()) {
        Some(parts) if parts.len() >= 8 && parts[5] == "execution" => {
            (Some(parts[6].to_owned()), Some(parts[7..].join(":")))
        }
        _ => (None, arn.clone()),
    };
    ContextInfo { requested_by: s("requestedBy"), machine, execution, execution_arn: arn, step: s("stateName") }
}

#[component]
fn ContextLine(context: ContextInfo) -> impl IntoView {
    let ContextInfo { requested_by, machine, execution, step, .. } = context;
    let source = match (machine, step) {
        (Some(m), Some(s)) => Some(format!("{m} › {s}")),
        (Some(m), None) => Some(m),
        (None, Some(s)) => Some(s),
        (None, None) => execution,
    };
    view! {
        <p class="item__context">
            {requested_by
                .map(|who| {
                    view! {
                        <span class="item__who">
                            <span class="item__label">{tr(|t| t.requested_by)}" "</span>
                            {who}
                        </span>
                    }
                })}
            {source.map(|s| view! { <span class="item__source">{s}</span> })}
        </p>
    }
}

/// "k of n approvals" with one dot per required approval (decoration; the text is what is read).
#[component]
pub fn ProgressDots(progress: Progress) -> impl IntoView {
    let ctx = use_app();
    let Progress { approvals, required } = progress;
    let dots: Vec<bool> = (0..required.min(10)).map(|i| i < approvals).collect();
    view! {
        <span class="progress" data-testid="progress">
            <span class="progress__dots" aria-hidden="true">
                {dots
                    .into_iter()
                    .map(|on| view! { <span class="progress__dot" class:progress__dot--on=on></span> })
                    .collect_view()}
            </span>
            <span class="progress__text">{move || (ctx.texts().progress)(approvals, required)}</span>
        </span>
    }
}

pub fn status_text(t: &Texts, status: ApprovalStatus, verdict: Option<Verdict>) -> &'static str {
    match status {
        ApprovalStatus::DecidedUnconfirmed => (t.status_unconfirmed)(verdict != Some(Verdict::Reject)),
        ApprovalStatus::Pending | ApprovalStatus::Claimed => t.status_pending,
        ApprovalStatus::Approved => t.status_approved,
        ApprovalStatus::Rejected => t.status_rejected,
        ApprovalStatus::Expired => t.status_expired,
    }
}

#[component]
pub fn StatusBadge(status: ApprovalStatus, #[prop(default = None)] verdict: Option<Verdict>) -> impl IntoView {
    let ctx = use_app();
    let class = match status {
        ApprovalStatus::DecidedUnconfirmed => "badge badge--unconfirmed",
        ApprovalStatus::Pending | ApprovalStatus::Claimed => "badge badge--pending",
        ApprovalStatus::Approved => "badge badge--approved",
        ApprovalStatus::Rejected => "badge badge--rejected",
        ApprovalStatus::Expired => "badge badge--expired",
    };
    view! {
        <span
            class=class
            data-testid="status"
            data-status=status.as_str()
            data-verdict=verdict.map(|v| v.as_str())
        >
            {move || status_text(ctx.texts(), status, verdict)}
        </span>
    }
}

#[component]
fn ListSkeleton() -> impl IntoView {
    view! {
        <div class="items items--skeleton" data-testid="inbox-loading">
            <p class="visually-hidden" role="status">{tr(|t| t.loading)}</p>
            {(0..3)
                .map(|_| {
                    view! {
                        <div class="item item--skeleton" aria-hidden="true">
                            <div class="skeleton__block skeleton__block--chip"></div>
                            <div class="skeleton__block skeleton__block--title"></div>
                            <div class="skeleton__block skeleton__block--short"></div>
                        </div>
                    }
                })
                .collect_view()}
        </div>
    }
}
