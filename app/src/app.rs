//! The application shell: header, main area (routes), footer, and the configuration bootstrap.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::{use_location, use_params_map};
use leptos_router::path;
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::config::{self, ConfigError, Locale, SpaConfig};
use crate::i18n::{texts, Texts};

/// Which screen the main area shows. Kept apart from the payload so that a failed retry (same phase,
/// new error) updates the message in place instead of re-creating the retry button under the user's focus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Loading,
    Failed,
    Ready,
}

#[derive(Clone, Debug)]
enum ConfigState {
    Loading,
    Failed(ConfigError),
    Ready(SpaConfig),
}

impl ConfigState {
    fn phase(&self) -> Phase {
        match self {
            ConfigState::Loading => Phase::Loading,
            ConfigState::Failed(_) => Phase::Failed,
            ConfigState::Ready(_) => Phase::Ready,
        }
    }
}

/// What the pages read from context.
#[derive(Clone, Copy)]
pub struct AppContext {
    /// `Some` once `/config.json` has been loaded (the routes only render then).
    pub config: Memo<Option<SpaConfig>>,
    pub locale: Memo<Locale>,
}

impl AppContext {
    fn texts(&self) -> &'static Texts {
        texts(self.locale.get())
    }
}

fn use_app() -> AppContext {
    expect_context::<AppContext>()
}

/// Sets `document.title` from a reactive source (no leptos_meta needed: the SPA renders nothing else in
/// `<head>`).
fn use_title(title: impl Fn() -> String + 'static) {
    Effect::new(move |_| document().set_title(&title()));
}

#[component]
pub fn App() -> impl IntoView {
    let state = RwSignal::new(ConfigState::Loading);
    let fetching = RwSignal::new(false);
    let browser_locale = Locale::from_browser();

    let phase = Memo::new(move |_| state.with(ConfigState::phase));
    let config = Memo::new(move |_| match &*state.read() {
        ConfigState::Ready(cfg) => Some(cfg.clone()),
        _ => None,
    });
    let locale = Memo::new(move |_| config.with(|c| c.as_ref().map_or(browser_locale, SpaConfig::locale)));
    let error = Memo::new(move |_| match &*state.read() {
        ConfigState::Failed(e) => Some(e.to_string()),
        _ => None,
    });
    let ctx = AppContext { config, locale };
    provide_context(ctx);

    let load = move || {
        if fetching.get_untracked() {
            return;
        }
        fetching.set(true);
        spawn_local(async move {
            let result = config::load().await;
            fetching.set(false);
            state.set(match result {
                Ok(cfg) => ConfigState::Ready(cfg),
                Err(e) => {
                    leptos::logging::warn!("ringi: {e}");
                    ConfigState::Failed(e)
                }
            });
        });
    };
    load();

    // <html lang> follows the UI language (screen readers pick their voice from it).
    Effect::new(move |_| {
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("lang", locale.get().tag());
        }
    });

    // The e2e smoke test waits for `[data-testid=app-ready]`: only the fully rendered shell carries it.
    let testid = move || match phase.get() {
        Phase::Loading => "app-loading",
        Phase::Failed => "app-error",
        Phase::Ready => "app-ready",
    };

    view! {
        <Router>
            <div class="app" data-testid=testid>
                // target="_self": the router leaves the click to the browser, whose fragment navigation
                // also moves keyboard focus to <main tabindex="-1">.
                <a class="skip-link" href="#main" target="_self">
                    {move || ctx.texts().skip_to_content}
                </a>
                <SiteHeader />
                <main id="main" class="site-main" tabindex="-1" aria-busy=move || fetching.get().to_string()>
                    {move || match phase.get() {
                        Phase::Loading => view! { <Skeleton /> }.into_any(),
                        Phase::Failed => {
                            view! { <ConfigFailure error fetching on_retry=load /> }.into_any()
                        }
                        Phase::Ready => view! { <AppRoutes /> }.into_any(),
                    }}
                </main>
                <SiteFooter />
            </div>
        </Router>
    }
}

#[component]
fn AppRoutes() -> impl IntoView {
    // After a client-side navigation the clicked link is usually gone with the old page: move focus to <main>
    // (tabindex=-1) so that keyboard and screen-reader users continue from the top of the new page.
    let location = use_location();
    Effect::new(move |previous: Option<String>| {
        let path = location.pathname.get();
        if previous.is_some_and(|previous| previous != path) {
            if let Some(main) = document().get_element_by_id("main").and_then(|el| el.dyn_into::<HtmlElement>().ok()) {
                let _ = main.focus();
            }
        }
        path
    });
    view! {
        <Routes fallback=|| view! { <NotFound /> }>
            <Route path=path!("/") view=Inbox />
            <Route path=path!("/a/:id") view=ApprovalPage />
        </Routes>
    }
}

#[component]
fn SiteHeader() -> impl IntoView {
    let ctx = use_app();
    view! {
        <header class="site-header">
            <div class="site-header__inner">
                <a class="wordmark" href="/" aria-label=move || ctx.texts().home_label>
                    <span class="wordmark__kanji" lang="ja" aria-hidden="true">"稟議"</span>
                    <span class="wordmark__latin" aria-hidden="true">"ringi"</span>
                </a>
                <span class="site-header__tagline">{move || ctx.texts().tagline}</span>
            </div>
        </header>
    }
}

#[component]
fn SiteFooter() -> impl IntoView {
    let ctx = use_app();
    let version = move || ctx.config.with(|c| c.as_ref().map(|c| c.version.clone()));
    view! {
        <footer class="site-footer">
            <p class="site-footer__inner">
                <span class="site-footer__name">"ringi"</span>
                <Show when=move || version().is_some()>
                    <span class="site-footer__sep" aria-hidden="true">"·"</span>
                    <span>{move || ctx.texts().version_label}" "</span>
                    <span class="site-footer__version" data-testid="app-version">
                        {move || version().unwrap_or_default()}
                    </span>
                </Show>
            </p>
        </footer>
    }
}

/// Placeholder blocks while `/config.json` loads. The visible blocks are decoration; the status text is
/// for assistive technology.
#[component]
fn Skeleton() -> impl IntoView {
    let ctx = use_app();
    view! {
        <div class="page skeleton" data-testid="app-skeleton">
            <p class="visually-hidden" role="status">{move || ctx.texts().loading}</p>
            <div class="skeleton__block skeleton__block--title" aria-hidden="true"></div>
            <div class="skeleton__block" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--short" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--button" aria-hidden="true"></div>
        </div>
    }
}

#[component]
fn ConfigFailure(
    error: Memo<Option<String>>,
    fetching: RwSignal<bool>,
    on_retry: impl Fn() + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let ctx = use_app();
    use_title(move || format!("{} · ringi", ctx.texts().config_error_title));
    view! {
        <section class="page card card--error" role="alert" aria-labelledby="config-error-title" data-testid="config-error">
            <h1 id="config-error-title" class="page__title">{move || ctx.texts().config_error_title}</h1>
            <p>{move || ctx.texts().config_error_body}</p>
            <p class="card__detail"><code>{move || error.get().unwrap_or_default()}</code></p>
            <button
                type="button"
                class="button button--primary"
                data-testid="config-retry"
                aria-disabled=move || fetching.get().to_string()
                on:click=move |_| on_retry()
            >
                {move || if fetching.get() { ctx.texts().retrying } else { ctx.texts().retry }}
            </button>
        </section>
    }
}

#[component]
fn SignInButton() -> impl IntoView {
    let ctx = use_app();
    // No behaviour yet: the Cognito Hosted UI flow (code + PKCE) comes with the auth stage.
    view! {
        <button type="button" class="button button--primary" data-testid="sign-in">
            {move || ctx.texts().sign_in}
        </button>
    }
}

#[component]
fn Inbox() -> impl IntoView {
    let ctx = use_app();
    use_title(move || format!("{} · ringi", ctx.texts().inbox_title));
    view! {
        <section class="page card" aria-labelledby="inbox-title" data-testid="inbox-page">
            <h1 id="inbox-title" class="page__title">{move || ctx.texts().inbox_title}</h1>
            <p>{move || ctx.texts().inbox_loaded}</p>
            <SignInButton />
        </section>
    }
}

#[component]
fn ApprovalPage() -> impl IntoView {
    let ctx = use_app();
    let params = use_params_map();
    // Only displayed (as text, never as markup); the API validates it (`ApprovalId::parse`) when it is used.
    let id = move || params.read().get("id").unwrap_or_default();
    use_title(move || format!("{} · ringi", ctx.texts().approval_title));
    view! {
        <section class="page card" aria-labelledby="approval-title" data-testid="approval-page">
            <h1 id="approval-title" class="page__title">{move || ctx.texts().approval_title}</h1>
            <dl class="facts">
                <div class="facts__row">
                    <dt>{move || ctx.texts().approval_id_label}</dt>
                    <dd><code class="approval-id" data-testid="approval-id">{id}</code></dd>
                </div>
            </dl>
            <p>{move || ctx.texts().approval_sign_in}</p>
            <SignInButton />
        </section>
    }
}

#[component]
fn NotFound() -> impl IntoView {
    let ctx = use_app();
    use_title(move || format!("{} · ringi", ctx.texts().not_found_title));
    view! {
        <section class="page card" aria-labelledby="not-found-title" data-testid="not-found-page">
            <h1 id="not-found-title" class="page__title">{move || ctx.texts().not_found_title}</h1>
            <p>{move || ctx.texts().not_found_body}</p>
            <p><a class="link" href="/">{move || ctx.texts().back_to_inbox}</a></p>
        </section>
    }
}
