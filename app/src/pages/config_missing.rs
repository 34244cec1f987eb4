//! The main area of a page served without the embedded configuration: `/config.json` is fetched, with a skeleton
//! meanwhile and a retry card when it fails. The worker embeds it in every page it serves, so only other hosts of
//! the files (or a broken embedding) come here, in a chunk of its own (`app::config_fallback`).

use leptos::prelude::*;

use crate::components::{Block, ErrorCard, Skeleton};
use crate::context::{use_app, use_title_tr};
use crate::infra::config::{self, ConfigError};

#[component]
pub fn FetchConfig() -> impl IntoView {
    let ctx = use_app();
    // One load per dispatch (on mount, on each retry); a configuration that arrives is the app's from then on.
    let load = Action::new_local(move |_: &()| async move {
        let loaded = config::load().await;
        match &loaded {
            Ok(cfg) => {
                ctx.locale.set(config::ui_locale(Some(cfg)));
                ctx.config.set(Some(cfg.clone()));
            }
            Err(e) => leptos::logging::warn!("ringi: {e}"),
        }
        loaded.err()
    });
    load.dispatch(());
    // The action keeps its last answer while a retry is on its way: the card stays mounted, only its detail changes.
    let failure: Signal<Option<ConfigError>> = Signal::derive(move || load.value().get().flatten());
    let failed = Memo::new(move |_| failure.with(Option::is_some));
    let detail = Signal::derive(move || failure.with(|f| f.as_ref().map(ToString::to_string).unwrap_or_default()));
    let pending = Signal::from(load.pending());
    move || {
        if !failed.get() {
            return view! {
                <Skeleton
                    class="page skeleton"
                    testid="app-skeleton"
                    label=|t| t.loading
                    blocks=&[Block::Title, Block::Line, Block::Short, Block::Button]
                />
            }
            .into_any();
        }
        use_title_tr(|t| t.config_error_title);
        view! {
            <ErrorCard
                name="config"
                title=|t| t.config_error_title
                body=|t| t.config_error_body
                detail
                pending
                on_retry=move || {
                    load.dispatch(());
                }
                page=true
            />
        }
        .into_any()
    }
}
