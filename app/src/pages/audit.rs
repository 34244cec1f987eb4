//! `/audit` (operators): the event log of every approval in a date range, oldest first, "load more" by the
//! API's cursor, and the range as a CSV download (fetched with the bearer, saved from a Blob: no token in a
//! URL, nothing inline for the CSP).

use leptos::prelude::*;
use ringi_core::domain::audit::Event;
use wasm_bindgen::JsCast;

use crate::components::BusyButton;
use crate::context::{tr, use_app, use_title_tr, AppContext, Pick};
use crate::infra::api::{self, ApiError};
use crate::infra::time;
use crate::pages::approval::timeline::detail_list;
use crate::pages::sign_in::Reauthenticate;

/// Days the page shows at first: the last week, today included.
const DEFAULT_DAYS: u32 = 7;

/// A local calendar day as `<input type=date>` writes it (`YYYY-MM-DD`), `days_back` days before today.
fn local_day(days_back: u32) -> String {
    let d = js_sys::Date::new(&(js_sys::Date::now() - f64::from(days_back) * 86_400_000.0).into());
    format!("{:04}-{:02}-{:02}", d.get_full_year(), d.get_month() + 1, d.get_date())
}

/// The start of a local day (`YYYY-MM-DD`, `+ add_days`) as RFC 3339 UTC.
fn day_start(day: &str, add_days: u32) -> Option<String> {
    let mut parts = day.split('-').map(|p| p.parse::<u32>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d)), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let date = js_sys::Date::new_with_year_month_day(y, m as i32 - 1, (d + add_days) as i32);
    date.get_time().is_finite().then(|| String::from(date.to_iso_string()))
}

/// The chosen days as the API's half-open range: from the first day's start to the day after the last.
fn range(from: &str, to: &str) -> Option<(String, String)> {
    Some((day_start(from, 0)?, day_start(to, 1)?))
}

/// What the page shows below the form.
#[derive(Clone, Debug, PartialEq)]
enum Listing {
    Loading,
    Ready,
    Failed(ApiError),
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let ctx = use_app();
    use_title_tr(|t| t.audit.page_title);
    let from = RwSignal::new(local_day(DEFAULT_DAYS - 1));
    let to = RwSignal::new(local_day(0));
    let events = RwSignal::new(Vec::<Event>::new());
    let next = RwSignal::new(None::<String>);
    let listing = RwSignal::new(Listing::Loading);
    let invalid = RwSignal::new(false);
    // The range of the list shown (a load more continues it, whatever the inputs say meanwhile).
    let shown = RwSignal::new(None::<(String, String)>);

    let load = page_loader(events, next, shown, listing);
    let submit = move || match range(&from.get_untracked(), &to.get_untracked()) {
        Some(r) if r.0 < r.1 => {
            invalid.set(false);
            load.dispatch((r, None));
        }
        _ => invalid.set(true),
    };
    submit();
    let download = Action::new_local(move |r: &(String, String)| {
        let r = r.clone();
        async move {
            let csv = api::audit_csv(&r.0, &r.1).await?;
            save_csv(&csv, &format!("ringi-audit-{}-{}.csv", &r.0[..10], &r.1[..10]));
            Ok::<(), ApiError>(())
        }
    });
    let downloading = download.pending();
    let loading = load.pending();

    view! {
        <div class="page audit-page" data-testid="audit-page">
            <h1 class="page__title">{tr(|t| t.audit.page_title)}</h1>
            <p class="muted">{tr(|t| t.audit.intro)}</p>
            <form
                class="card audit-range"
                data-testid="audit-range"
                on:submit=move |ev| {
                    ev.prevent_default();
                    submit();
                }
            >
                <div class="audit-range__fields">
                    {day_input(|t| t.audit.from, "audit-from", from, invalid)}
                    {day_input(|t| t.audit.to, "audit-to", to, invalid)}
                </div>
                <Show when=move || invalid.get()>
                    <p class="notice notice--error" role="alert" data-testid="audit-range-invalid">
                        {tr(|t| t.audit.range_invalid)}
                    </p>
                </Show>
                <div class="audit-range__buttons">
                    <button type="submit" class="button button--primary" data-testid="audit-show">
                        {tr(|t| t.audit.show)}
                    </button>
                    <BusyButton
                        class="button button--secondary"
                        testid="audit-download"
                        busy=downloading
                        on_click=move || {
                            if let Some(r) = shown.get_untracked() {
                                download.dispatch(r);
                            }
                        }
                    >
                        {tr(|t| t.audit.download_csv)}
                    </BusyButton>
                </div>
                <p class="visually-hidden" role="status" aria-live="polite" data-testid="audit-download-status">
                    {move || match (downloading.get(), download.value().get()) {
                        (true, _) => ctx.texts().audit.downloading.to_owned(),
                        (false, Some(Ok(()))) => ctx.texts().audit.downloaded.to_owned(),
                        (false, Some(Err(e))) => format!("{}: {e}", ctx.texts().err_server),
                        (false, None) => String::new(),
                    }}
                </p>
            </form>
            {move || match listing.get() {
                Listing::Loading => view! { <p class="muted" role="status">{tr(|t| t.loading)}</p> }.into_any(),
                Listing::Failed(e) => failed(e),
                Listing::Ready => view! {
                    <section class="card" aria-labelledby="audit-list-title" aria-busy=move || loading.get().to_string()>
                        <h2 id="audit-list-title" class="card__title" data-testid="audit-count">
                            {move || (ctx.texts().audit.shown)(events.with(Vec::len), next.with(Option::is_some))}
                        </h2>
                        <Show
                            when=move || events.with(|e| !e.is_empty())
                            fallback=|| view! { <p class="muted" data-testid="audit-empty">{tr(|t| t.audit.empty)}</p> }
                        >
                            <ol class="timeline audit-log" data-testid="audit-list">
                                <For each=move || events.get().into_iter().enumerate() key=|(i, _)| *i let:item>
                                    {audit_row(ctx, item.1)}
                                </For>
                            </ol>
                        </Show>
                        <Show when=move || next.with(Option::is_some)>
                            <BusyButton
                                class="button button--secondary inbox__more"
                                testid="audit-more"
                                busy=loading
                                on_click=move || {
                                    if let (Some(r), Some(c)) = (shown.get_untracked(), next.get_untracked()) {
                                        load.dispatch((r, Some(c)));
                                    }
                                }
                            >
                                {move || if loading.get() { ctx.texts().loading_more } else { ctx.texts().load_more }}
                            </BusyButton>
                        </Show>
                    </section>
                }
                .into_any(),
            }}
        </div>
    }
}

/// Loads one page of `(range, cursor)`: a first page replaces the list, a later one extends it.
fn page_loader(
    events: RwSignal<Vec<Event>>,
    next: RwSignal<Option<String>>,
    shown: RwSignal<Option<(String, String)>>,
    listing: RwSignal<Listing>,
) -> Action<((String, String), Option<String>), ()> {
    Action::new_local(move |(r, cursor): &((String, String), Option<String>)| {
        let (r, cursor) = (r.clone(), cursor.clone());
        async move {
            match api::audit(&r.0, &r.1, cursor.as_deref()).await {
                Ok(page) => {
                    if cursor.is_none() {
                        events.set(page.items);
                    } else {
                        events.update(|e| e.extend(page.items));
                    }
                    next.set(page.next_cursor);
                    shown.set(Some(r));
                    listing.set(Listing::Ready);
                }
                Err(e) => {
                    leptos::logging::warn!("ringi: audit: {e}");
                    // A failed "load more" keeps the list; a failed first page says why.
                    if cursor.is_none() || matches!(e, ApiError::Unauthorized) {
                        listing.set(Listing::Failed(e));
                    }
                }
            }
        }
    })
}

/// Why the list is not shown: sign in again, not an auditor, a refused range, or the server's error.
fn failed(e: ApiError) -> AnyView {
    match e {
        ApiError::Unauthorized => view! { <Reauthenticate /> }.into_any(),
        ApiError::Server { status: 403, .. } => view! {
            <section class="card" aria-labelledby="audit-forbidden-title" data-testid="audit-forbidden">
                <h2 id="audit-forbidden-title" class="card__title">{tr(|t| t.audit.forbidden_title)}</h2>
                <p>{tr(|t| t.audit.forbidden_body)}</p>
            </section>
        }
        .into_any(),
        ApiError::Invalid { .. } => view! {
            <p class="notice notice--error" role="alert" data-testid="audit-error">
                {tr(|t| t.audit.range_invalid)}
            </p>
        }
        .into_any(),
        e => view! {
            <p class="notice notice--error" role="alert" data-testid="audit-error">
                {tr(|t| t.err_load_failed)}" "<span class="muted">{e.to_string()}</span>
            </p>
        }
        .into_any(),
    }
}

/// One end of the range: a labelled `<input type=date>` bound to `value`.
fn day_input(label: Pick, testid: &'static str, value: RwSignal<String>, invalid: RwSignal<bool>) -> impl IntoView {
    view! {
        <label class="field">
            <span class="field__label">{tr(label)}</span>
            <input
                class="input"
                type="date"
                data-testid=testid
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
                aria-invalid=move || invalid.get().to_string()
            />
        </label>
    }
}

/// One event of the log: what, which approval, by whom, when, its facts.
fn audit_row(ctx: AppContext, e: Event) -> impl IntoView {
    let kind = e.kind;
    let at = e.at.clone();
    let href = format!("/a/{}", e.approval_id);
    let when = move || time::absolute_str(&at, ctx.locale.get());
    let actor = e.actor.clone();
    let detail = e.detail.clone();
    view! {
        <li class="timeline__event" data-testid="audit-event" data-kind=kind.as_str()>
            <p class="timeline__line">
                <strong class="timeline__kind">{move || ctx.texts().audit.kind(kind)}</strong>
                " · "
                <span class="timeline__actor">{move || ctx.texts().audit.actor(&actor)}</span>
            </p>
            <p class="timeline__when">
                <time datetime=e.at.clone()>{when}</time>
            </p>
            <p class="timeline__when">
                <a class="link audit-log__approval" href=href>
                    <span class="visually-hidden">{tr(|t| t.audit.col_approval)}" "</span>
                    <code>{e.approval_id.clone()}</code>
                </a>
            </p>
            {move || detail_list(ctx, &detail)}
        </li>
    }
}

/// Saves text as a file: a Blob behind an object URL, clicked from a detached `<a download>`.
fn save_csv(csv: &str, name: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(csv));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/csv;charset=utf-8");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    if let Some(a) = document().create_element("a").ok().and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok()) {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    // Revoked once the browser has surely read it.
    set_timeout(move || drop(web_sys::Url::revoke_object_url(&url)), std::time::Duration::from_secs(60));
}
