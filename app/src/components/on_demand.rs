//! A part of the app that comes in a wasm chunk of its own, fetched when first shown: the build splits the app at
//! its `#[wasm_split]` functions (scripts/build/split.mjs), so the approval page's download carries none of it.

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use leptos::wasm_split::SplitLoaderError;

use super::ErrorCard;

/// The chunk of a part could not be fetched (no network, or a deploy replaced this build's files). Not remembered:
/// the next attempt fetches it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkMissing;

impl From<SplitLoaderError> for ChunkMissing {
    fn from(_: SplitLoaderError) -> Self {
        ChunkMissing
    }
}

impl std::fmt::Display for ChunkMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("this part of the app could not be downloaded")
    }
}

/// What a part's `#[wasm_split(…, fallible)]` function returns: the part's view, built by code in its chunk.
pub type Part = Result<fn() -> AnyView, ChunkMissing>;

#[derive(Clone, Copy)]
enum Phase {
    Loading,
    Failed,
    Loaded(fn() -> AnyView),
}

/// Nothing while the part's chunk is fetched; then the part; a retry card (in place of the part) if the fetch
/// failed, unless the part is `quiet`. The card stays mounted across retries (only its button shows the retry in flight).
/// A quiet part that failed tries again whenever another part's chunk arrives (the network is back, or that part
/// was in the same chunk).
#[component]
pub fn OnDemand<L, F>(
    /// The part's split function.
    load: L,
    /// A part of a page (its card under the page's `<h1>`), else a page of its own (the card is the page).
    #[prop(optional)]
    in_page: bool,
    /// A part the page can do without (a hint), or one whose chunk another part's card on the page already stands
    /// for: a chunk that cannot be fetched leaves it out, with no retry card of its own.
    #[prop(optional)]
    quiet: bool,
) -> impl IntoView
where
    L: Fn() -> F + Copy + Send + Sync + 'static,
    F: Future<Output = Part> + 'static,
{
    // Only the loader is per part: the rest is compiled once for all of them.
    part_view(Box::new(move || Box::pin(load())), in_page, quiet)
}

type Loader = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Part>>>>;

thread_local! {
    /// Notified whenever a part's chunk arrives: what quiet parts that failed wait for.
    static ARRIVED: ArcTrigger = ArcTrigger::new();
}

fn part_view(load: Loader, in_page: bool, quiet: bool) -> AnyView {
    let load = StoredValue::new_local(load);
    let phase = RwSignal::new(Phase::Loading);
    let pending = RwSignal::new(false);
    let fetch = move || {
        pending.set(true);
        let loading = load.with_value(|load| load());
        leptos::task::spawn_local(async move {
            let loaded = loading.await;
            let _ = pending.try_set(false);
            match loaded {
                Ok(part) => {
                    let _ = phase.try_set(Phase::Loaded(part));
                    ARRIVED.with(ArcTrigger::notify);
                }
                // A failed retry leaves the card as it is (the button under the user's focus is not re-created).
                Err(ChunkMissing) => {
                    if phase.try_get_untracked().is_some_and(|now| !matches!(now, Phase::Failed)) {
                        phase.set(Phase::Failed);
                    }
                }
            }
        });
    };
    fetch();
    if quiet {
        let arrived = ARRIVED.with(ArcTrigger::clone);
        Effect::new(move |tracked: Option<()>| {
            arrived.track();
            if tracked.is_some() && matches!(phase.get_untracked(), Phase::Failed) && !pending.get_untracked() {
                fetch();
            }
        });
    }
    (move || match phase.get() {
        Phase::Loading => ().into_any(),
        Phase::Loaded(part) => part(),
        Phase::Failed if quiet => ().into_any(),
        Phase::Failed => view! {
            <ErrorCard
                name="part"
                title=|t| t.part_error_title
                body=|t| t.part_error_body
                detail=ChunkMissing.to_string()
                pending=pending
                on_retry=fetch
                in_page=in_page
                page=!in_page
            />
        }
        .into_any(),
    })
    .into_any()
}
