//! Sign-in with the provider's hosted page: authorization code + PKCE (S256). app/boot.js starts every sign-in
//! (so a short link opened signed-out leaves before the wasm has downloaded) and, on `/auth/callback`, has the code
//! exchanged by the sign-in's own module (the `ringi-sign-in` crate, with the `oauth2` crate) while the app still
//! downloads; the callback page awaits that ([`completion`]).
//!
//! * Tokens live in memory and sessionStorage only, never localStorage ([`ringi_sign_in::session`]). Only the API
//!   bearer is kept: the access token, or the ID token when the worker's `TOKEN_USE` is `id` (`/config.json` says
//!   which); its payload is decoded for display only — the worker verifies it.
//! * No refresh token is stored: when the access token expires (or the API answers 401) the app sends the
//!   user through the authorize endpoint again; the Hosted UI session makes that an instant round trip.

use std::cell::RefCell;

use ringi_core::adapters::idp::IdpProfile;
use ringi_core::api::wire::SpaConfig;
use ringi_core::base::sign_in::SignInRequirement;
use ringi_sign_in::callback::safe_return;
use ringi_sign_in::session::{self as stored, claims, Session, SESSION_KEY, SIGNED_OUT_KEY};
use ringi_sign_in::SignInFailure;
use wasm_bindgen::JsValue;

use crate::infra::storage;

/// A token this close to its expiry is not used any more (clock skew, request latency).
const EXPIRY_MARGIN_MS: f64 = 30_000.0;
/// When the API refuses a token this fresh, signing in again would loop: report it instead.
const FRESH_TOKEN_MS: f64 = 20_000.0;

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// Why signing in did not work. Shown as a technical detail under a translated message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// The callback did not complete the sign-in (the sign-in module's answer).
    Callback(SignInFailure),
    /// The API refused a token that was just issued: signing in again would loop.
    Refused,
    Config(String),
    /// The sign-in's code (its module, or the callback page's chunk) could not be downloaded.
    Unavailable,
}

impl From<leptos::wasm_split::SplitLoaderError> for AuthError {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        AuthError::Unavailable
    }
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Callback(failure) => failure.fmt(f),
            AuthError::Refused => write!(f, "the server did not accept the new sign-in"),
            AuthError::Config(e) => write!(f, "configuration: {e}"),
            AuthError::Unavailable => {
                write!(f, "the sign-in could not be completed: part of the app could not be downloaded")
            }
        }
    }
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// The current address as a return target: path + query (never a fragment).
pub fn current_path() -> String {
    let location = web_sys::window().map(|w| w.location());
    let path = location.as_ref().and_then(|l| l.pathname().ok()).unwrap_or_else(|| "/".into());
    let search = location.and_then(|l| l.search().ok()).unwrap_or_default();
    format!("{path}{search}")
}

/// The sign-in module, fetched (boot.js `ringiLoadSignIn`: once it arrived, at once); an error when it cannot be.
pub async fn sign_in_module() -> Result<(), AuthError> {
    let loading = ringi_load_sign_in().map_err(|_| AuthError::Unavailable)?;
    wasm_bindgen_futures::JsFuture::from(loading).await.map(drop).map_err(|_| AuthError::Unavailable)
}

/// The outcome of this page's sign-in, for the callback page: the exchange boot.js started as soon as the page
/// was parsed (`ringiCompleteSignIn`: one per page, whoever asks), or one started now. The page to go to.
pub async fn completion(cfg: &SpaConfig) -> Result<String, AuthError> {
    let config = serde_json::to_string(cfg).map_err(|e| AuthError::Config(e.to_string()))?;
    let completing = ringi_complete_sign_in(&config).map_err(|_| AuthError::Unavailable)?;
    match wasm_bindgen_futures::JsFuture::from(completing).await {
        Ok(to) => Ok(safe_return(&to.as_string().unwrap_or_default())),
        // The module answers a failure as JSON; anything else is the module not being there.
        Err(e) => Err(e
            .as_string()
            .and_then(|text| ringi_sign_in::json::from_str(&text).ok())
            .map_or(AuthError::Unavailable, AuthError::Callback)),
    }
}

/// Starts a sign-in: a new PKCE verifier and state, remembered in sessionStorage with the page to return
/// to, then the browser goes to the Hosted UI.
pub fn sign_in(cfg: &SpaConfig, return_to: &str, lang: &str) -> Result<(), AuthError> {
    start(cfg, return_to, lang, false, None)
}

fn start(
    cfg: &SpaConfig,
    return_to: &str,
    lang: &str,
    reauth: bool,
    step_up: Option<&SignInRequirement>,
) -> Result<(), AuthError> {
    let config = serde_json::to_string(cfg)
        .ok()
        .and_then(|json| js_sys::JSON::parse(&json).ok())
        .ok_or_else(|| AuthError::Config("unreadable".into()))?;
    // app/boot.js: writes the pending record `complete` reads (and forgets an explicit sign-out), then leaves
    // for the Hosted UI.
    // A step-up asks the provider for a new sign-in: `prompt=login`, `max_age`, `acr_values` (boot.js). Built
    // field by field rather than serialized: the approval page's wasm stays without a serializer for it.
    let step_up = step_up.map_or(JsValue::UNDEFINED, |r| {
        let o = js_sys::Object::new();
        if let Some(max) = r.max_age_seconds {
            let _ = js_sys::Reflect::set(&o, &"maxAgeSeconds".into(), &max.into());
        }
        let acr = r.acr.iter().map(|a| JsValue::from_str(a)).collect::<js_sys::Array>();
        let _ = js_sys::Reflect::set(&o, &"acr".into(), &acr);
        o.into()
    });
    let leaving = ringi_sign_in(&config, &safe_return(return_to), lang, reauth, &step_up)
        .map_err(|e| AuthError::Config(js_message(&e)))?;
    wasm_bindgen_futures::spawn_local(async move {
        // Only fails before the browser leaves (no Web Crypto): the page stays on "Redirecting…".
        if let Err(e) = wasm_bindgen_futures::JsFuture::from(leaving).await {
            leptos::logging::warn!("ringi: sign-in could not start: {}", js_message(&e));
        }
    });
    Ok(())
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `globalThis.ringiSignIn` (app/boot.js): the one place that starts a sign-in (state, PKCE, record).
    #[wasm_bindgen(js_namespace = globalThis, js_name = ringiSignIn, catch)]
    fn ringi_sign_in(
        config: &JsValue,
        return_to: &str,
        lang: &str,
        reauth: bool,
        step_up: &JsValue,
    ) -> Result<js_sys::Promise, JsValue>;

    /// `globalThis.ringiLoadSignIn` (app/boot.js): fetches the sign-in module; resolves once it is there.
    #[wasm_bindgen(js_namespace = globalThis, js_name = ringiLoadSignIn, catch)]
    fn ringi_load_sign_in() -> Result<js_sys::Promise, JsValue>;

    /// `globalThis.ringiCompleteSignIn` (app/boot.js): the callback's code exchange, run by the sign-in module with
    /// the page's configuration (JSON); resolves to the page to go to, rejects with a `SignInFailure` as JSON.
    #[wasm_bindgen(js_namespace = globalThis, js_name = ringiCompleteSignIn, catch)]
    fn ringi_complete_sign_in(config: &str) -> Result<js_sys::Promise, JsValue>;
}

fn js_message(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| js_sys::Error::from(e.clone()).message().as_string())
        .unwrap_or_else(|| "sign-in could not start".into())
}

/// Signs in again after the token expired or was refused (or, `step_up`, was not a fresh or strong enough
/// sign-in), coming back to `return_to`. Refuses (instead of looping through the Hosted UI) when the current
/// token came from such a sign-in seconds ago.
pub fn reauthenticate(
    cfg: &SpaConfig,
    return_to: &str,
    lang: &str,
    step_up: Option<&SignInRequirement>,
) -> Result<(), AuthError> {
    let current = session();
    if current.as_ref().is_some_and(|s| s.via_reauth && now() - s.obtained_at < FRESH_TOKEN_MS) {
        return Err(AuthError::Refused);
    }
    forget();
    // Without a session this is simply the first sign-in of the tab (a short link opened signed-out).
    start(cfg, return_to, lang, current.is_some(), step_up)
}

fn load_session() -> Option<Session> {
    stored::get_json(SESSION_KEY)
}

fn session() -> Option<Session> {
    if let Some(s) = SESSION.with(|s| s.borrow().clone()) {
        return Some(s);
    }
    let s = load_session()?;
    SESSION.with(|slot| *slot.borrow_mut() = Some(s.clone()));
    Some(s)
}

/// The API bearer, if there is one that is not about to expire.
pub fn bearer() -> Option<String> {
    session().filter(|s| s.expires_at - EXPIRY_MARGIN_MS > now()).map(|s| s.bearer)
}

/// This tab was signed in and the token has run out: sign in again without asking.
pub fn has_expired_session() -> bool {
    session().is_some() && bearer().is_none()
}

/// The user pressed "Sign out" in this tab (the landing page then waits for a click).
pub fn signed_out_explicitly() -> bool {
    storage::session_get(SIGNED_OUT_KEY).is_some()
}

/// Forgets the tokens (memory and sessionStorage).
pub fn forget() {
    SESSION.with(|s| *s.borrow_mut() = None);
    storage::session_remove(SESSION_KEY);
}

/// Clears everything of this tab's session and ends the provider's session too: Cognito's `/logout`
/// (`client_id`, `logout_uri`) or OpenID Connect RP-initiated logout (`client_id`, `post_logout_redirect_uri`,
/// `id_token_hint`). A provider without an end-session endpoint: back to the landing page.
pub fn sign_out(cfg: &SpaConfig) {
    let hint = session().and_then(|s| s.id_token_hint);
    forget();
    storage::session_clear_ringi();
    storage::session_set(SIGNED_OUT_KEY, "1");
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    match sign_out_url(cfg, &format!("{origin}/"), hint.as_deref()) {
        Some(url) => navigate_away(&url),
        None => navigate_away("/"),
    }
}

fn sign_out_url(cfg: &SpaConfig, back_to: &str, id_token_hint: Option<&str>) -> Option<String> {
    let endpoint = cfg.end_session_endpoint.as_deref().filter(|e| !e.is_empty())?;
    // The query is appended to the endpoint as configured (the worker checked it is an https URL), encoded as the
    // url crate would: only the callback's code exchange needs that crate's parser (oauth2), and it comes apart.
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("client_id", &cfg.client_id);
    match cfg.provider {
        IdpProfile::Cognito => {
            query.append_pair("logout_uri", back_to);
        }
        IdpProfile::Oidc => {
            query.append_pair("post_logout_redirect_uri", back_to);
            if let Some(hint) = id_token_hint {
                query.append_pair("id_token_hint", hint);
            }
        }
    }
    let joiner = if endpoint.contains('?') { '&' } else { '?' };
    Some(format!("{endpoint}{joiner}{}", query.finish()))
}

fn navigate_away(url: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().assign(url);
    }
}

/// The signed-in user's name for the header: the bearer's `username` / `cognito:username` (Cognito),
/// `preferred_username` / `name` (OIDC), else its `email`.
pub fn user_name() -> Option<String> {
    let c = claims(&bearer()?)?;
    ["username", "cognito:username", "preferred_username", "name", "email"]
        .into_iter()
        .find_map(|k| c.get(k).and_then(|v| v.as_str()).map(str::to_owned))
}

/// Whether the bearer's groups claim (`GROUPS_CLAIM`) names `group` (display only: the worker checks the
/// verified token on every request).
pub fn in_group(cfg: &SpaConfig, group: &str) -> bool {
    let path = if cfg.groups_claim.is_empty() { "cognito:groups" } else { cfg.groups_claim.as_str() };
    bearer()
        .and_then(|t| claims(&t))
        .and_then(|c| ringi_core::adapters::jwt::groups(&c, path).ok())
        .is_some_and(|gs| gs.iter().any(|g| g == group))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringi_core::adapters::idp::TokenUse;

    fn cfg(provider: IdpProfile, end_session: Option<&str>) -> SpaConfig {
        SpaConfig {
            vapid_public_key: None,
            cognito_domain: String::new(),
            client_id: "c1".into(),
            redirect_uri: "https://r.example.com/auth/callback".into(),
            issuer: "https://i.example.com".into(),
            token_use: TokenUse::Access,
            default_locale: "en".into(),
            version: "v".into(),
            admin_group: None,
            provider,
            authorization_endpoint: "https://i.example.com/authorize".into(),
            token_endpoint: "https://i.example.com/token".into(),
            end_session_endpoint: end_session.map(str::to_owned),
            scope: "openid".into(),
            groups_claim: "groups".into(),
        }
    }

    #[test]
    fn sign_out_follows_the_provider() {
        let back = "https://r.example.com/";
        let cognito = sign_out_url(&cfg(IdpProfile::Cognito, Some("https://auth.example.com/logout")), back, None);
        assert_eq!(
            cognito.as_deref(),
            Some("https://auth.example.com/logout?client_id=c1&logout_uri=https%3A%2F%2Fr.example.com%2F")
        );
        let oidc = sign_out_url(&cfg(IdpProfile::Oidc, Some("https://i.example.com/logout")), back, Some("h.i.t"));
        assert_eq!(
            oidc.as_deref(),
            Some("https://i.example.com/logout?client_id=c1&post_logout_redirect_uri=https%3A%2F%2Fr.example.com%2F&id_token_hint=h.i.t")
        );
        assert_eq!(sign_out_url(&cfg(IdpProfile::Oidc, None), back, None), None, "no end-session endpoint");
        let with_query =
            sign_out_url(&cfg(IdpProfile::Oidc, Some("https://i.example.com/logout?tenant=a b")), "/x&y", None);
        assert_eq!(
            with_query.as_deref(),
            Some("https://i.example.com/logout?tenant=a b&client_id=c1&post_logout_redirect_uri=%2Fx%26y")
        );
    }
}
