//! The application shell: header (user, language, sign-out), main area (routes), footer, the configuration
//! bootstrap and the sign-in gate of the pages.

use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::{use_location, use_navigate};
use leptos_router::{path, NavigateOptions};
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::approval::ApprovalPage;
use crate::auth::{self, AuthError};
use crate::config::{self, ConfigError, Locale, SpaConfig};
use crate::i18n::{texts, Texts};
use crate::inbox::Inbox;

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
    /// `Some` once the configuration is known (embedded in the page, else `/config.json`; the routes only
    /// render then).
    pub config: Memo<Option<SpaConfig>>,
    pub locale: RwSignal<Locale>,
    /// The signed-in user's name (display only), `None` when signed out.
    pub user: RwSignal<Option<String>>,
    /// "Now" for relative times, ticking every 30 s.
    pub now: RwSignal<f64>,
}

impl AppContext {
    /// The UI strings (tracks the language).
    pub fn texts(&self) -> &'static Texts {
        texts(self.locale.get())
    }

    fn lang(&self) -> &'static str {
        self.locale.get_untracked().tag()
    }

    /// Goes to the Hosted UI; after sign-in the app comes back to `return_to`.
    pub fn sign_in(&self, return_to: &str) {
        if let Some(cfg) = self.config.get_untracked() {
            if let Err(e) = auth::sign_in(&cfg, return_to, self.lang()) {
                leptos::logging::warn!("ringi: {e}");
            }
        }
    }

    /// Signs in again (token expired or refused) and comes back to the current page.
    pub fn reauthenticate(&self) -> Result<(), AuthError> {
        let cfg = self.config.get_untracked().ok_or_else(|| AuthError::Config("not loaded".into()))?;
        auth::reauthenticate(&cfg, &auth::current_path(), self.lang())
    }

    pub fn sign_out(&self) {
        if let Some(cfg) = self.config.get_untracked() {
            self.user.set(None);
            auth::sign_out(&cfg);
        }
    }
}

pub fn use_app() -> AppContext {
    expect_context::<AppContext>()
}

/// Sets `document.title` from a reactive source (no leptos_meta needed: the SPA renders nothing else in
/// `<head>`).
pub fn use_title(title: impl Fn() -> String + 'static) {
    Effect::new(move |_| document().set_title(&format!("{} · ringi", title())));
}

/// A translated text as a reactive view or attribute value. Every text goes through this one closure type:
/// each distinct closure would instantiate Leptos' render machinery anew (measurably larger wasm).
pub fn tr(pick: fn(&Texts) -> &'static str) -> impl Fn() -> &'static str + Copy + Send + Sync + 'static {
    let ctx = use_app();
    move || pick(ctx.texts())
}

/// `document.title` from a translated text.
pub fn use_title_tr(pick: fn(&Texts) -> &'static str) {
    let ctx = use_app();
    use_title(move || pick(ctx.texts()).to_owned());
}

/// Moves keyboard focus to an element by id (after the DOM has updated).
pub fn focus_id(id: &str) {
    let id = id.to_owned();
    request_animation_frame(move || {
        if let Some(el) = document().get_element_by_id(&id).and_then(|el| el.dyn_into::<HtmlElement>().ok()) {
            let _ = el.focus();
        }
    });
}

#[component]
pub fn App() -> impl IntoView {
    // The configuration embedded in the page by the worker; `/config.json` only if it is missing.
    let embedded = config::embedded();
    // The language: the one chosen in the header earlier, else the browser's, else the configured default.
    let chosen = Locale::saved().or_else(Locale::from_browser);
    let locale = RwSignal::new(chosen.or_else(|| embedded.as_ref().map(config::default_locale)).unwrap_or_default());
    let has_embedded = embedded.is_some();
    let state = RwSignal::new(embedded.map_or(ConfigState::Loading, ConfigState::Ready));
    let fetching = RwSignal::new(false);

    let phase = Memo::new(move |_| state.with(ConfigState::phase));
    let config = Memo::new(move |_| match &*state.read() {
        ConfigState::Ready(cfg) => Some(cfg.clone()),
        _ => None,
    });
    let error = Memo::new(move |_| match &*state.read() {
        ConfigState::Failed(e) => Some(e.to_string()),
        _ => None,
    });
    let user = RwSignal::new(auth::user_name());
    let now = RwSignal::new(crate::time::now());
    set_interval(move || now.set(crate::time::now()), Duration::from_secs(30));
    let ctx = AppContext { config, locale, user, now };
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
                Ok(cfg) => {
                    if chosen.is_none() {
                        locale.set(config::default_locale(&cfg));
                    }
                    ConfigState::Ready(cfg)
                }
                Err(e) => {
                    leptos::logging::warn!("ringi: {e}");
                    ConfigState::Failed(e)
                }
            });
        });
    };
    if !has_embedded {
        load();
    }

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
                    {tr(|t| t.skip_to_content)}
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
            <Route path=path!("/") view=InboxRoute />
            <Route path=path!("/a/:id") view=ApprovalRoute />
            <Route path=path!("/auth/callback") view=Callback />
        </Routes>
    }
}

/// `/`: the inbox when signed in; an expired session signs in again by itself; otherwise a landing card
/// with a Sign-in button (so that signing out does not bounce straight back to the Hosted UI).
#[component]
fn InboxRoute() -> impl IntoView {
    if auth::bearer().is_some() {
        return view! { <Inbox /> }.into_any();
    }
    if auth::has_expired_session() {
        return view! { <Reauthenticate /> }.into_any();
    }
    view! { <Welcome /> }.into_any()
}

/// `/a/{id}`: a short link opened signed-out goes to the Hosted UI at once and comes back here.
#[component]
fn ApprovalRoute() -> impl IntoView {
    if auth::bearer().is_some() {
        return view! { <ApprovalPage /> }.into_any();
    }
    view! { <Reauthenticate /> }.into_any()
}

/// Sends the user through the Hosted UI, coming back to the current page. Shown for the instant before the
/// browser leaves; if the API refused a token that was just issued, explains that instead of looping.
#[component]
pub fn Reauthenticate() -> impl IntoView {
    let ctx = use_app();
    let refused = RwSignal::new(false);
    match ctx.reauthenticate() {
        Ok(()) => {}
        Err(AuthError::Refused) => refused.set(true),
        Err(e) => leptos::logging::warn!("ringi: {e}"),
    }
    view! {
        <Show when=move || refused.get() fallback=move || view! { <Redirecting /> }>
            <SignInProblem detail=AuthError::Refused.to_string() refused=true />
        </Show>
    }
}

#[component]
fn Redirecting() -> impl IntoView {
    use_title_tr(|t| t.redirecting);
    view! {
        <div class="page skeleton" data-testid="redirecting">
            <p class="skeleton__label" role="status">{tr(|t| t.redirecting)}</p>
            <div class="skeleton__block skeleton__block--title" aria-hidden="true"></div>
            <div class="skeleton__block" aria-hidden="true"></div>
            <div class="skeleton__block skeleton__block--short" aria-hidden="true"></div>
        </div>
    }
}

#[component]
fn Welcome() -> impl IntoView {
    let ctx = use_app();
    let signed_out = auth::signed_out_explicitly();
    use_title_tr(|t| t.welcome_title);
    view! {
        <section class="page card welcome" aria-labelledby="welcome-title" data-testid="welcome">
            <Show when=move || signed_out>
                <p class="notice notice--info" role="status" data-testid="signed-out">
                    {tr(|t| t.signed_out_notice)}
                </p>
            </Show>
            <span class="welcome__mark" lang="ja" aria-hidden="true">"稟議"</span>
            <h1 id="welcome-title" class="page__title">{tr(|t| t.welcome_title)}</h1>
            <p>{tr(|t| t.welcome_body)}</p>
            <button
                type="button"
                class="button button--primary"
                data-testid="sign-in"
                on:click=move |_| ctx.sign_in(&auth::current_path())
            >
                {tr(|t| t.sign_in)}
            </button>
        </section>
    }
}

/// `/auth/callback`: `main` has already taken `code`/`state` out of the URL; exchange the code and go to the
/// page the sign-in started from.
#[component]
fn Callback() -> impl IntoView {
    let ctx = use_app();
    let navigate = use_navigate();
    let failure = RwSignal::new(None::<AuthError>);
    use_title_tr(|t| t.signing_in);
    if let Some(cfg) = ctx.config.get_untracked() {
        spawn_local(async move {
            match auth::complete(&cfg).await {
                Ok(to) => {
                    ctx.user.set(auth::user_name());
                    navigate(&to, NavigateOptions { replace: true, ..Default::default() });
                }
                // A reload of the callback page of a sign-in that already completed: nothing to do.
                Err(AuthError::NoPendingSignIn) if auth::bearer().is_some() => {
                    navigate("/", NavigateOptions { replace: true, ..Default::default() });
                }
                Err(e) => {
                    leptos::logging::warn!("ringi: sign-in: {e}");
                    failure.set(Some(e));
                }
            }
        });
    }
    view! {
        {move || match failure.get() {
            None => {
                view! {
                    <div class="page skeleton" data-testid="signing-in">
                        <p class="skeleton__label" role="status">{tr(|t| t.signing_in)}</p>
                        <div class="skeleton__block skeleton__block--title" aria-hidden="true"></div>
                        <div class="skeleton__block" aria-hidden="true"></div>
                    </div>
                }
                    .into_any()
            }
            Some(e) => view! { <SignInProblem detail=e.to_string() refused=false /> }.into_any(),
        }}
    }
}

/// The sign-in could not be completed (or its token was refused): explain, offer to sign in again.
#[component]
fn SignInProblem(detail: String, refused: bool) -> impl IntoView {
    let ctx = use_app();
    use_title_tr(|t| t.sign_in_failed_title);
    let again = move |_| {
        auth::forget();
        let to = if refused { auth::current_path() } else { "/".to_owned() };
        ctx.sign_in(&to);
    };
    view! {
        <section class="page card card--error" role="alert" aria-labelledby="signin-error-title" data-testid="sign-in-error">
            <h1 id="signin-error-title" class="page__title">{tr(|t| t.sign_in_failed_title)}</h1>
            <p>
                {move || if refused { ctx.texts().sign_in_refused_body } else { ctx.texts().sign_in_failed_body }}
            </p>
            <p class="card__detail"><code>{detail}</code></p>
            <button type="button" class="button button--primary" data-testid="sign-in" on:click=again>
                {tr(|t| t.sign_in)}
            </button>
        </section>
    }
}

#[component]
fn SiteHeader() -> impl IntoView {
    let ctx = use_app();
    let switch = move |_| {
        let next = ctx.locale.get_untracked().other();
        next.save();
        ctx.locale.set(next);
    };
    view! {
        <header class="site-header">
            <div class="site-header__inner">
                <a class="wordmark" href="/">
                    <span class="wordmark__kanji" lang="ja" aria-hidden="true">"稟議"</span>
                    <span class="wordmark__latin">"ringi"</span>
                    <span class="visually-hidden">{tr(|t| t.home_label)}</span>
                </a>
                <div class="site-header__actions">
                    <button type="button" class="chip" data-testid="language-switch" on:click=switch>
                        <span class="visually-hidden">{tr(|t| t.switch_language)}" "</span>
                        <span lang=move || ctx.locale.get().other().tag()>{tr(|t| t.other_language)}</span>
                    </button>
                    <Show when=move || ctx.user.with(Option::is_some)>
                        <span class="user" title=move || ctx.user.get().unwrap_or_default()>
                            <span class="visually-hidden">{tr(|t| t.signed_in_as)}" "</span>
                            <span class="user__name" data-testid="user-name">
                                {move || ctx.user.get().unwrap_or_default()}
                            </span>
                        </span>
                        <button
                            type="button"
                            class="chip chip--quiet"
                            data-testid="sign-out"
                            on:click=move |_| ctx.sign_out()
                        >
                            {tr(|t| t.sign_out)}
                        </button>
                    </Show>
                </div>
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
                    <span>{tr(|t| t.version_label)}" "</span>
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
    view! {
        <div class="page skeleton" data-testid="app-skeleton">
            <p class="visually-hidden" role="status">{tr(|t| t.loading)}</p>
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
    use_title_tr(|t| t.config_error_title);
    view! {
        <section class="page card card--error" role="alert" aria-labelledby="config-error-title" data-testid="config-error">
            <h1 id="config-error-title" class="page__title">{tr(|t| t.config_error_title)}</h1>
            <p>{tr(|t| t.config_error_body)}</p>
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
pub fn NotFound() -> impl IntoView {
    use_title_tr(|t| t.not_found_title);
    view! {
        <section class="page card" aria-labelledby="not-found-title" data-testid="not-found-page">
            <h1 id="not-found-title" class="page__title">{tr(|t| t.not_found_title)}</h1>
            <p>{tr(|t| t.not_found_body)}</p>
            <p><a class="link" href="/">{tr(|t| t.back_to_inbox)}</a></p>
        </section>
    }
}
