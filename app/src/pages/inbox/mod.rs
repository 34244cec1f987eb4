//! `/` (and `/?tab=decided`): the caller's approvals, pending or decided, cursor-paginated.

mod list;

use leptos::prelude::*;
use ringi_core::api::wire::{InboxItem, InboxPage};
use ringi_core::domain::inbox::InboxFilter;

use crate::components::{Block, BusyButton, ErrorCard, Skeleton};
use crate::context::{tr, use_app, use_title_tr};
use crate::infra::api::{self, ApiError};
use crate::pages::sign_in::Reauthenticate;
use list::List;

/// The first page of a tab, with the tab it is for (`true`: decided).
type FirstPage = (bool, Result<InboxPage, ApiError>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The first page of this tab is on its way: skeleton.
    Loading,
    Ready,
    Failed,
    /// The token was refused or ran out: sign in again.
    SignIn,
}

impl Phase {
    /// What to show for the first page loaded so far, on tab `decided`. A page of the other tab (the user
    /// just switched) is not shown while this tab's loads.
    fn of(first: Option<&FirstPage>, decided: bool) -> Self {
        match first {
            None => Phase::Loading,
            Some((tab, _)) if *tab != decided => Phase::Loading,
            Some((_, Ok(_))) => Phase::Ready,
            Some((_, Err(ApiError::Unauthorized))) => Phase::SignIn,
            Some((_, Err(_))) => Phase::Failed,
        }
    }
}

/// Pages fetched with "Load more", continuing the first page.
#[derive(Clone, Debug, Default, PartialEq)]
struct More {
    items: Vec<InboxItem>,
    /// `Some`: the cursor after the last of these pages (`Some(None)`: that was the last page).
    next: Option<Option<String>>,
}

/// The inbox's state, shared by its parts.
#[derive(Clone, Copy)]
struct InboxState {
    decided: Memo<bool>,
    first: LocalResource<FirstPage>,
    more: RwSignal<More>,
    load_more: Action<String, Result<(), ApiError>>,
    /// A first page is loading again (refresh, retry, other tab).
    refreshing: RwSignal<bool>,
}

impl InboxState {
    fn new(decided: Memo<bool>) -> Self {
        let more = RwSignal::new(More::default());
        let first = LocalResource::new(move || {
            let tab = decided.get();
            async move {
                let result = api::inbox(filter(tab), None).await;
                // A new first page starts the list over (unless the user has moved to the other tab meanwhile).
                if decided.get_untracked() == tab {
                    more.set(More::default());
                }
                (tab, result)
            }
        });
        let load_more = Action::new_local(move |after: &String| {
            let after = after.clone();
            let tab = decided.get_untracked();
            async move {
                let page = api::inbox(filter(tab), Some(&after)).await.inspect_err(|e| match e {
                    // The token ran out: the first page asks again and signs in.
                    ApiError::Unauthorized => first.refetch(),
                    e => leptos::logging::warn!("ringi: inbox: {e}"),
                })?;
                // Appended only where the list still ends (not refreshed or switched meanwhile).
                if untrack(|| cursor(first, more)).as_deref() == Some(after.as_str()) {
                    more.update(|m| {
                        m.items.extend(page.items);
                        m.next = Some(page.next_cursor);
                    });
                }
                Ok(())
            }
        });
        InboxState { decided, first, more, load_more, refreshing: RwSignal::new(false) }
    }

    fn phase(self) -> Phase {
        let decided = self.decided.get();
        self.first.with(|first| Phase::of(first.as_ref(), decided))
    }

    /// Where the list continues (`None`: nothing more).
    fn cursor(self) -> Option<String> {
        cursor(self.first, self.more)
    }

    fn count(self) -> usize {
        self.first.with(|f| first_page(f).map_or(0, |p| p.items.len())) + self.more.with(|m| m.items.len())
    }

    /// Every item shown: the first page and the pages loaded after it.
    fn items(self) -> Vec<InboxItem> {
        let mut items = self.first.with(|f| first_page(f).map(|p| p.items.clone())).unwrap_or_default();
        self.more.with(|m| items.extend(m.items.iter().cloned()));
        items
    }

    fn error(self) -> String {
        self.first.with(|f| f.as_ref().and_then(|(_, r)| r.as_ref().err()).map(ToString::to_string)).unwrap_or_default()
    }
}

/// The tab's filter (`true`: decided).
fn filter(decided: bool) -> InboxFilter {
    if decided {
        InboxFilter::Decided
    } else {
        InboxFilter::Pending
    }
}

fn first_page(first: &Option<FirstPage>) -> Option<&InboxPage> {
    first.as_ref().and_then(|(_, r)| r.as_ref().ok())
}

fn cursor(first: LocalResource<FirstPage>, more: RwSignal<More>) -> Option<String> {
    more.with(|m| m.next.clone()).unwrap_or_else(|| first.with(|f| first_page(f).and_then(|p| p.next_cursor.clone())))
}

#[component]
pub fn Inbox() -> impl IntoView {
    let ctx = use_app();
    let location = crate::router::use_location();
    let decided = Memo::new(move |_| location.query("tab").as_deref() == Some("decided"));
    let state = InboxState::new(decided);
    let phase = Memo::new(move |_| state.phase());
    use_title_tr(|t| t.inbox_title);

    let count_text = move || {
        if phase.get() != Phase::Ready {
            return String::new();
        }
        let n = state.count();
        let more = state.cursor().is_some();
        let t = ctx.texts();
        if decided.get() {
            (t.count_decided)(n, more)
        } else {
            (t.count_pending)(n, more)
        }
    };
    let refreshing = state.refreshing;

    view! {
        <section class="page inbox" aria-labelledby="inbox-title" data-testid="inbox-page">
            <div class="page__head">
                <h1 id="inbox-title" class="page__title">{tr(|t| t.inbox_title)}</h1>
                <BusyButton
                    class="button button--ghost refresh"
                    testid="refresh"
                    busy=refreshing
                    on_click=move || state.first.refetch()
                >
                    <span class="refresh__icon" class:refresh__icon--spin=move || refreshing.get() aria-hidden="true">
                        "↻"
                    </span>
                    // Both labels take the same place, one hidden: the button keeps its width when it flips
                    // (no layout shift after the first load).
                    <span class="refresh__label">
                        <span class:refresh__label--off=move || refreshing.get()>{tr(|t| t.refresh)}</span>
                        <span class:refresh__label--off=move || !refreshing.get()>{tr(|t| t.refreshing)}</span>
                    </span>
                </BusyButton>
            </div>
            <Tabs decided />
            <p class="inbox__count" role="status" data-testid="inbox-count">{count_text}</p>
            <Transition fallback=InboxSkeleton set_pending=refreshing>
                {view! { <Content state /> }.into_any()}
            </Transition>
            <LoadMore state phase />
        </section>
    }
}

#[component]
fn Tabs(decided: Memo<bool>) -> impl IntoView {
    view! {
        <nav class="tabs" aria-label=tr(|t| t.inbox_tabs_label)>
            <a class="tabs__tab" href="/" data-testid="tab-pending" aria-current=move || (!decided.get()).then_some("page")>
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
    }
}

#[component]
fn InboxSkeleton() -> impl IntoView {
    view! {
        <Skeleton
            class="items items--skeleton"
            testid="inbox-loading"
            label=|t| t.loading
            blocks=&[Block::Chip, Block::Title, Block::Short]
            rows=3
        />
    }
}

/// The list, its skeleton or its error. Created under the <Transition>: its phase memo reads the first
/// page there, so that the Transition shows the skeleton first and reports every reload as pending.
#[component]
fn Content(state: InboxState) -> impl IntoView {
    let phase = Memo::new(move |_| state.phase());
    move || match phase.get() {
        Phase::Loading => view! { <InboxSkeleton /> }.into_any(),
        Phase::SignIn => view! { <Reauthenticate /> }.into_any(),
        Phase::Failed => view! {
            <ErrorCard
                name="inbox"
                title=|t| t.inbox_error_title
                body=|t| t.err_load_failed
                detail=Signal::derive(move || state.error())
                pending=state.refreshing
                on_retry=move || state.first.refetch()
                in_page=true
            />
        }
        .into_any(),
        Phase::Ready => view! { <List items=Signal::derive(move || state.items()) decided=state.decided /> }.into_any(),
    }
}

/// "Load more" below a list that has more, and its failure.
#[component]
fn LoadMore(state: InboxState, phase: Memo<Phase>) -> impl IntoView {
    let ctx = use_app();
    let busy = state.load_more.pending();
    let failed = move || !busy.get() && state.load_more.value().with(|v| matches!(v, Some(Err(_))));
    view! {
        <Show when=move || phase.get() == Phase::Ready && state.cursor().is_some()>
            <BusyButton
                class="button button--secondary inbox__more"
                testid="load-more"
                busy
                on_click=move || {
                    if let Some(after) = untrack(|| state.cursor()) {
                        state.load_more.dispatch_local(after);
                    }
                }
            >
                {move || if busy.get() { ctx.texts().loading_more } else { ctx.texts().load_more }}
            </BusyButton>
            <Show when=failed>
                <p class="notice notice--error" role="alert">{tr(|t| t.err_load_failed)}</p>
            </Show>
        </Show>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> InboxPage {
        InboxPage { items: Vec::new(), next_cursor: None }
    }

    #[test]
    fn phases() {
        assert_eq!(Phase::of(None, false), Phase::Loading);
        assert_eq!(Phase::of(Some(&(false, Ok(page()))), false), Phase::Ready);
        assert_eq!(Phase::of(Some(&(false, Ok(page()))), true), Phase::Loading, "the other tab's page");
        assert_eq!(Phase::of(Some(&(true, Err(ApiError::Unauthorized))), true), Phase::SignIn);
        assert_eq!(Phase::of(Some(&(true, Err(ApiError::NotFound))), true), Phase::Failed);
    }
}
