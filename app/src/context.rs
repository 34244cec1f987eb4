//! What every page reads from context: the configuration, the language, the user, "now"; and the small
//! helpers built on it (translated texts, the document title, moving focus).

use leptos::prelude::*;
use ringi_core::base::locale::Locale;
use ringi_core::base::sign_in::SignInRequirement;
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::i18n::{texts, Texts};
use crate::infra::auth::{self, AuthError};
use crate::infra::config::SpaConfig;

#[derive(Clone, Copy)]
pub struct AppContext {
    /// `Some` once the configuration is known (embedded in the page, else `/config.json`; the routes only
    /// render then). Set once.
    pub config: RwSignal<Option<SpaConfig>>,
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
        self.locale.get_untracked().as_str()
    }

    /// Goes to the Hosted UI; after sign-in the app comes back to `return_to`.
    pub fn sign_in(&self, return_to: &str) {
        if let Some(cfg) = self.config.get_untracked() {
            if let Err(e) = auth::sign_in(&cfg, return_to, self.lang()) {
                leptos::logging::warn!("ringi: {e}");
            }
        }
    }

    /// Signs in again (token expired or refused, or — `step_up` — a fresher or stronger sign-in asked for) and
    /// comes back to the current page.
    pub fn reauthenticate(&self, step_up: Option<&SignInRequirement>) -> Result<(), AuthError> {
        let cfg = self.config.get_untracked().ok_or_else(|| AuthError::Config("not loaded".into()))?;
        auth::reauthenticate(&cfg, &auth::current_path(), self.lang(), step_up)
    }

    /// Signs out; first, where notifications are allowed, the worker forgets this device's push subscription
    /// (with the token still in hand).
    pub fn sign_out(&self) {
        let Some(cfg) = self.config.get_untracked() else { return };
        let user = self.user;
        if !crate::infra::push::may_be_subscribed() {
            user.set(None);
            auth::sign_out(&cfg);
            return;
        }
        leptos::task::spawn_local(async move {
            crate::infra::push::forget_this_device().await;
            user.set(None);
            auth::sign_out(&cfg);
        });
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

/// A text picked from [`Texts`]: a plain `fn` pointer, so every text view shares one closure type.
pub type Pick = fn(&Texts) -> &'static str;

/// A translated text as a reactive view or attribute value. Every text goes through this one closure type:
/// each distinct closure would instantiate Leptos' render machinery anew (measurably larger wasm).
pub fn tr(pick: Pick) -> impl Fn() -> &'static str + Copy + Send + Sync + 'static {
    let ctx = use_app();
    move || pick(ctx.texts())
}

/// `document.title` from a translated text.
pub fn use_title_tr(pick: Pick) {
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
