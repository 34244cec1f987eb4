//! The application shell: header (user, language, sign-out), main area (routes), footer, and the
//! configuration the routes wait for.

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::components::{OnDemand, Part};
use crate::context::{tr, use_app, AppContext};
use crate::infra::auth;
use crate::infra::config;
use crate::pages::approval::ApprovalPage;
#[cfg(feature = "admin")]
use crate::pages::audit::AuditPage;
use crate::pages::inbox::Inbox;
use crate::pages::not_found::NotFound;
#[cfg(feature = "admin")]
use crate::pages::settings::Settings;
use crate::pages::sign_in::{CallbackRoute, Reauthenticate, Welcome};
use crate::router::{Location, Page};

#[component]
pub fn App() -> impl IntoView {
    // The configuration the worker embedded in the page; a part fetches `/config.json` when it is missing.
    let config = RwSignal::new(config::embedded());
    let locale = RwSignal::new(config.with_untracked(|c| config::ui_locale(c.as_ref())));
    let user = RwSignal::new(auth::user_name());
    let now = RwSignal::new(crate::infra::time::now());
    set_interval(move || now.set(crate::infra::time::now()), Duration::from_secs(30));
    provide_context(AppContext { config, locale, user, now });
    Location::provide();

    // <html lang> follows the UI language (screen readers pick their voice from it).
    Effect::new(move |_| {
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("lang", locale.get().as_str());
        }
    });

    // The e2e smoke test waits for `[data-testid=app-ready]`: only the fully rendered shell carries it.
    let testid = move || if config.with(Option::is_some) { "app-ready" } else { "app-loading" };

    view! {
        <div class="app" data-testid=testid>
            // target="_self": the router leaves the click to the browser, whose fragment navigation
            // also moves keyboard focus to <main tabindex="-1">.
            <a class="skip-link" href="#main" target="_self">
                {tr(|t| t.skip_to_content)}
            </a>
            <SiteHeader />
            <main id="main" class="site-main" tabindex="-1">
                <ConfigGate />
            </main>
            <SiteFooter />
        </div>
    }
}

/// The routes once the configuration is known; until then, the part that fetches it.
#[component]
fn ConfigGate() -> impl IntoView {
    let ctx = use_app();
    let known = Memo::new(move |_| ctx.config.with(Option::is_some));
    move || {
        if known.get() {
            view! { <AppRoutes /> }.into_any()
        } else {
            view! { <OnDemand load=config_fallback /> }.into_any()
        }
    }
}

/// A page without the embedded configuration (not one the worker served) fetches `/config.json`: code in a chunk
/// of its own, since the worker's pages never need it.
#[leptos::wasm_split::wasm_split(config_fallback, fallible, wasm_split_path = ::leptos::wasm_split)]
fn config_fallback() -> Part {
    Ok(|| view! { <crate::pages::config_missing::FetchConfig /> }.into_any())
}

#[component]
fn AppRoutes() -> impl IntoView {
    let location = crate::router::use_location();
    let page = Memo::new(move |_| Page::parse(&location.path()));
    // After a client-side navigation the clicked link is usually gone with the old page: move focus to <main>
    // (tabindex=-1) so that keyboard and screen-reader users continue from the top of the new page.
    Effect::new(move |previous: Option<Page>| {
        let current = page.get();
        if previous.is_some_and(|previous| previous != current) {
            if let Some(main) = document().get_element_by_id("main").and_then(|el| el.dyn_into::<HtmlElement>().ok()) {
                let _ = main.focus();
            }
        }
        current
    });
    move || match page.get() {
        Page::Inbox => view! { <InboxRoute /> }.into_any(),
        Page::Approval(id) => view! { <ApprovalRoute id /> }.into_any(),
        Page::Callback => view! { <CallbackRoute /> }.into_any(),
        #[cfg(feature = "admin")]
        Page::Settings => view! { <SettingsRoute /> }.into_any(),
        #[cfg(feature = "admin")]
        Page::Audit => view! { <AuditRoute /> }.into_any(),
        // The bundle an emailed link loads has no pages of the full bundle: the worker never serves it their paths,
        // and its links to them are full-page loads (ringi-core `assets::FULL_BUNDLE_PATHS`).
        _ => view! { <NotFound /> }.into_any(),
    }
}

/// `/`: the inbox when signed in; an expired session signs in again by itself; otherwise a landing card
/// with a Sign-in button.
#[component]
fn InboxRoute() -> impl IntoView {
    if auth::bearer().is_some() {
        return view! { <OnDemand load=inbox_part /> }.into_any();
    }
    if auth::has_expired_session() {
        return view! { <Reauthenticate /> }.into_any();
    }
    view! { <Welcome /> }.into_any()
}

/// The inbox comes in a chunk of its own: an emailed link's approval page does not download it.
#[leptos::wasm_split::wasm_split(inbox, fallible, wasm_split_path = ::leptos::wasm_split)]
fn inbox_part() -> Part {
    Ok(|| view! { <Inbox /> }.into_any())
}

/// `/a/{id}`: a short link opened signed-out goes to the Hosted UI at once and comes back here. Another
/// approval's link starts a new page (its own load, form and outcome).
#[component]
fn ApprovalRoute(id: String) -> impl IntoView {
    if auth::bearer().is_none() {
        return view! { <Reauthenticate /> }.into_any();
    }
    view! { <ApprovalPage id /> }.into_any()
}

/// `/audit`: the operators' event log (signed in; the worker refuses everyone else with a 403).
#[cfg(feature = "admin")]
#[component]
fn AuditRoute() -> impl IntoView {
    if auth::bearer().is_none() {
        return view! { <Reauthenticate /> }.into_any();
    }
    view! { <AuditPage /> }.into_any()
}

/// Whether the signed-in user is an operator (`ADMIN_GROUP` in the token's groups): the shell then links
/// the audit page.
fn is_operator(ctx: AppContext) -> bool {
    ctx.user.with(Option::is_some)
        && ctx
            .config
            .with(|c| c.as_ref().is_some_and(|c| c.admin_group.as_deref().is_some_and(|g| auth::in_group(c, g))))
}

/// `/settings`: the user's own settings (out of office), signed in.
#[cfg(feature = "admin")]
#[component]
fn SettingsRoute() -> impl IntoView {
    if auth::bearer().is_none() {
        return view! { <Reauthenticate /> }.into_any();
    }
    view! { <Settings /> }.into_any()
}

#[component]
fn SiteHeader() -> impl IntoView {
    let ctx = use_app();
    let switch = move |_| {
        let next = config::other_locale(ctx.locale.get_untracked());
        config::save_locale(next);
        ctx.locale.set(next);
    };
    view! {
        <header class="site-header">
            <div class="site-header__inner">
                <a class="wordmark" href="/">
                    <span class="wordmark__kanji" lang="ja" aria-hidden="true">
                        "稟議"
                    </span>
                    <span class="wordmark__latin">"ringi"</span>
                    <span class="visually-hidden">{tr(|t| t.home_label)}</span>
                </a>
                <div class="site-header__actions">
                    <button type="button" class="chip" data-testid="language-switch" on:click=switch>
                        <span class="visually-hidden">{tr(|t| t.switch_language)}" "</span>
                        <span lang=move || config::other_locale(ctx.locale.get()).as_str()>{tr(|t| t.other_language)}</span>
                    </button>
                    // rel=external: a full-page load, so that the worker answers with the bundle that has the page.
                    {move || {
                        is_operator(ctx)
                            .then(|| {
                                view! {
                                    <a class="chip chip--quiet" href="/audit" rel="external" data-testid="audit-link">
                                        {tr(|t| t.audit.nav)}
                                    </a>
                                }
                            })
                    }}
                    {move || ctx.user.with(Option::is_some).then(|| view! {
                        <a class="chip chip--quiet" href="/settings" rel="external" data-testid="settings-link">
                            {tr(|t| t.delegation.settings_link)}
                        </a>
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
                    })}
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
                {move || {
                    version()
                        .map(|version| {
                            view! {
                                <span class="site-footer__sep" aria-hidden="true">
                                    "·"
                                </span>
                                <span>{tr(|t| t.version_label)}" "</span>
                                <span class="site-footer__version" data-testid="app-version">
                                    {version}
                                </span>
                            }
                        })
                }}
            </p>
        </footer>
    }
}
