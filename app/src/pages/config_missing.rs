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
    let failure = RwSignal::new(None::<ConfigError>);
    let pending = RwSignal::new(false);
    let fetch = move || {
        pending.set(true);
        leptos::task::spawn_local(async move {
            match config::load().await {
                Ok(cfg) => {
                    ctx.locale.set(config::ui_locale(Some(&cfg)));
                    ctx.config.set(Some(cfg));
                }
                Err(e) => {
                    leptos::logging::warn!("ringi: {e}");
                    failure.set(Some(e));
                }
            }
            pending.set(false);
        });
    };
    fetch();
    // The card stays mounted across retries: a failed retry only changes its detail.
    let failed = Memo::new(move |_| failure.with(Option::is_some));
    let detail = Signal::derive(move || failure.with(|f| f.as_ref().map(ToString::to_string).unwrap_or_default()));
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
                on_retry=fetch
                page=true
            />
        }
        .into_any()
    }
}
