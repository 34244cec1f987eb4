//! Sign-in with the Cognito Hosted UI: authorization code + PKCE (S256). app/boot.js starts every sign-in (so
//! a short link opened signed-out leaves for the Hosted UI before the wasm has downloaded); the callback is
//! checked here and the code exchanged with the `oauth2` crate, whose token request goes through
//! [`GlooHttp`], oauth2's async HTTP client trait implemented with gloo-net (the browser's `fetch`).
//!
//! * `state` is a fresh random value per sign-in, stored in sessionStorage together with the PKCE verifier and
//!   the page to come back to (`/a/{id}` for a short link opened signed-out): the state is the key of that
//!   record ([`Pending`], written by boot.js `startSignIn`), so only this tab's own sign-in can complete, and
//!   it lands where the user was going.
//! * The callback (`/auth/callback?code&state`) is read and removed from the address bar and history in
//!   `main` before anything else runs; the code is exchanged at the configuration's `tokenEndpoint`.
//! * Tokens live in memory and sessionStorage only, never localStorage. Only the API bearer is kept: the
//!   access token, or the ID token when the worker's `TOKEN_USE` is `id` (`/config.json` says which); its
//!   payload is decoded for display only — the worker verifies it.
//! * No refresh token is stored: when the access token expires (or the API answers 401) the app sends the
//!   user through the authorize endpoint again; the Hosted UI session makes that an instant round trip.

use std::cell::RefCell;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use futures_util::future::{FutureExt, LocalBoxFuture, Shared};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    AuthorizationCode, Client, ClientId, CsrfToken, EndpointNotSet, EndpointSet, ExtraTokenFields, PkceCodeVerifier,
    RedirectUrl, RequestTokenError, StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use ringi_core::adapters::idp::{IdpProfile, TokenUse};
use ringi_core::api::wire::SpaConfig;
use ringi_core::base::sign_in::SignInRequirement;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

use crate::infra::oauth_http::GlooHttp;
use crate::infra::storage;

pub const CALLBACK_PATH: &str = "/auth/callback";
pub(crate) const SESSION_KEY: &str = "ringi.session";
pub(crate) const PENDING_KEY: &str = "ringi.auth.pending";
/// Set by an explicit sign-out so that the landing page does not bounce straight back to the Hosted UI.
pub(crate) const SIGNED_OUT_KEY: &str = "ringi.signedOut";
/// A token this close to its expiry is not used any more (clock skew, request latency).
const EXPIRY_MARGIN_MS: f64 = 30_000.0;
/// A sign-in older than this cannot be completed (Cognito codes live 5 minutes).
const PENDING_MAX_AGE_MS: f64 = 15.0 * 60_000.0;
/// When the API refuses a token this fresh, signing in again would loop: report it instead.
const FRESH_TOKEN_MS: f64 = 20_000.0;

/// The OpenID Connect part of the token response, next to oauth2's standard fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct IdTokenField {
    #[serde(default)]
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

/// oauth2's basic client with the ID token kept; `A`/`T`: authorization and token endpoint set or not.
type CognitoClient<A = EndpointNotSet, T = EndpointNotSet> = Client<
    BasicErrorResponse,
    StandardTokenResponse<IdTokenField, BasicTokenType>,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    A,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    T,
>;
/// Only the token endpoint: the authorize URL is built by app/boot.js, which starts every sign-in.
type OauthClient = CognitoClient<EndpointNotSet, EndpointSet>;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session {
    /// The API bearer: the access token or the ID token (`TOKEN_USE`).
    bearer: String,
    /// Epoch milliseconds.
    expires_at: f64,
    obtained_at: f64,
    /// Obtained by [`reauthenticate`]: if the API refuses this one too, stop instead of looping.
    #[serde(default)]
    via_reauth: bool,
    /// OIDC only: the ID token, sent back to the provider's end-session endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token_hint: Option<String>,
}

/// One sign-in in flight, keyed by its `state`: the record app/boot.js `startSignIn` writes.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    state: String,
    verifier: String,
    return_to: String,
    created_at: f64,
    #[serde(default)]
    reauth: bool,
}

#[derive(Clone, Debug, Default)]
struct CallbackParams {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// A sign-in's completion (the page to go to), started once and awaited by whoever needs it.
type Completion = Shared<LocalBoxFuture<'static, Result<String, AuthError>>>;

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
    static CALLBACK: RefCell<Option<CallbackParams>> = const { RefCell::new(None) };
    static COMPLETION: RefCell<Option<Completion>> = const { RefCell::new(None) };
}

/// Why signing in did not work. Shown as a technical detail under a translated message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// `/auth/callback` opened without a sign-in of this tab in flight (reload, bookmark, other tab).
    NoPendingSignIn,
    /// `state` missing or different from the stored one: not this tab's sign-in.
    StateMismatch,
    /// The Hosted UI redirected back with `error=…`.
    Provider(String),
    /// The token endpoint refused the code or could not be reached.
    Token(String),
    /// The API refused a token that was just issued: signing in again would loop.
    Refused,
    Config(String),
    /// The sign-in's code (a chunk of the app) could not be downloaded.
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
            AuthError::NoPendingSignIn => write!(f, "no sign-in of this tab is in progress"),
            AuthError::StateMismatch => write!(f, "the sign-in response does not match this tab's request (state)"),
            AuthError::Provider(e) => write!(f, "the sign-in service answered: {e}"),
            AuthError::Token(e) => write!(f, "token request failed: {e}"),
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

fn client(cfg: &SpaConfig) -> Result<OauthClient, AuthError> {
    let bad = |e: oauth2::url::ParseError| AuthError::Config(e.to_string());
    // The worker's configuration names the endpoint: below the Hosted UI domain (Cognito) or from the
    // issuer's discovery document (OIDC), so the SPA never fetches that document itself.
    Ok(<CognitoClient>::new(ClientId::new(cfg.client_id.clone()))
        .set_token_uri(TokenUrl::new(cfg.token_endpoint.clone()).map_err(bad)?)
        .set_redirect_uri(RedirectUrl::new(cfg.redirect_uri.clone()).map_err(bad)?))
}

/// Only same-origin paths are followed after sign-in (no `//host`, no scheme, never the callback itself).
fn safe_return(path: &str) -> String {
    let ok = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && !path.starts_with(CALLBACK_PATH)
        && !path.chars().any(char::is_control);
    if ok {
        path.to_owned()
    } else {
        "/".to_owned()
    }
}

/// The current address as a return target: path + query (never a fragment).
pub fn current_path() -> String {
    let location = web_sys::window().map(|w| w.location());
    let path = location.as_ref().and_then(|l| l.pathname().ok()).unwrap_or_else(|| "/".into());
    let search = location.and_then(|l| l.search().ok()).unwrap_or_default();
    format!("{path}{search}")
}

/// Called first thing in `main`: when this page is the OAuth callback, take `code`/`state` (or `error`) out of
/// the URL and the history entry before any other code runs or any request is made. True when it was.
pub fn capture_callback() -> bool {
    let Some(window) = web_sys::window() else { return false };
    let location = window.location();
    if location.pathname().ok().as_deref() != Some(CALLBACK_PATH) {
        return false;
    }
    let search = location.search().unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let get = |name: &str| params.as_ref().and_then(|p| p.get(name));
    let captured = CallbackParams {
        code: get("code"),
        state: get("state"),
        error: get("error"),
        error_description: get("error_description"),
    };
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(CALLBACK_PATH));
    }
    CALLBACK.with(|c| *c.borrow_mut() = Some(captured));
    true
}

/// On the callback page, right after [`capture_callback`]: the code exchange starts now, not once the app has
/// mounted the callback's page (on a phone, main-thread tasks later). [`completion`] takes its outcome.
pub fn complete_early(cfg: SpaConfig) {
    let started: Completion = async move { exchange(cfg).await?.await }.boxed_local().shared();
    wasm_bindgen_futures::spawn_local(started.clone().map(drop));
    COMPLETION.with(|c| *c.borrow_mut() = Some(started));
}

/// The outcome of this page's sign-in, for the callback page (which comes in the exchange's chunk): the exchange
/// [`complete_early`] started, else one started now, also when the early one could not fetch the chunk (its code
/// was not used).
pub async fn completion(cfg: &SpaConfig) -> Result<String, AuthError> {
    if let Some(started) = COMPLETION.with(|c| c.borrow_mut().take()) {
        match started.await {
            Err(AuthError::Unavailable) => {}
            done => return done,
        }
    }
    complete(cfg).await
}

/// The code exchange (oauth2's token request and what it brings) comes in a chunk of its own with the callback page
/// (`pages::sign_in`), which only that page fetches (boot.js preloads it there, beside the app): an approval page
/// opened signed in needs none of it.
#[leptos::wasm_split::wasm_split(sign_in_callback, fallible, wasm_split_path = ::leptos::wasm_split)]
fn exchange(cfg: SpaConfig) -> Result<LocalBoxFuture<'static, Result<String, AuthError>>, AuthError> {
    Ok(async move { complete(&cfg).await }.boxed_local())
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

/// Completes the sign-in on `/auth/callback`: checks `state`, exchanges the code (with the PKCE verifier) and
/// keeps the API bearer. Returns the page to go to.
async fn complete(cfg: &SpaConfig) -> Result<String, AuthError> {
    let params = CALLBACK.with(|c| c.borrow_mut().take()).unwrap_or_default();
    // Single use: whatever happens next, this sign-in cannot be completed twice.
    let pending: Option<Pending> = storage::session_get_json(PENDING_KEY);
    storage::session_remove(PENDING_KEY);
    let Some(pending) = pending else {
        return Err(AuthError::NoPendingSignIn);
    };
    let expected = CsrfToken::new(pending.state);
    let state_ok = params
        .state
        .as_deref()
        .is_some_and(|got| ringi_core::base::hex::constant_time_eq(got.as_bytes(), expected.secret().as_bytes()));
    if !state_ok {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = params.error {
        let detail = params.error_description.map(|d| format!("{error}: {d}")).unwrap_or(error);
        return Err(AuthError::Provider(detail));
    }
    if now() - pending.created_at > PENDING_MAX_AGE_MS {
        return Err(AuthError::Provider("the sign-in took too long".into()));
    }
    let code = params.code.ok_or_else(|| AuthError::Provider("no authorization code".into()))?;
    let token = client(cfg)?
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(&GlooHttp)
        .await
        .map_err(|e| {
            AuthError::Token(match e {
                RequestTokenError::ServerResponse(r) => r.to_string(),
                other => other.to_string(),
            })
        })?;
    let bearer = match cfg.token_use {
        TokenUse::Access => token.access_token().secret().clone(),
        TokenUse::Id => token
            .extra_fields()
            .id_token
            .clone()
            .ok_or_else(|| AuthError::Token("the sign-in service returned no ID token".into()))?,
    };
    let obtained_at = now();
    // Relative lifetimes (`expires_in`, the bearer's own `exp - iat`), so a wrong device clock does not
    // matter; the worker checks `exp` itself and a 401 signs in again anyway.
    let ttl_ms = [
        token.expires_in().map(|d| d.as_millis() as f64),
        claims(&bearer).and_then(|c| Some((c.get("exp")?.as_f64()? - c.get("iat")?.as_f64()?) * 1000.0)),
    ]
    .into_iter()
    .flatten()
    .fold(None, |min: Option<f64>, t| Some(min.map_or(t, |m| m.min(t))))
    .unwrap_or(3_600_000.0);
    let expires_at = obtained_at + ttl_ms;
    // The ID token is kept as the sign-out's `id_token_hint` (some providers, Okta among them, require it).
    let id_token_hint = match cfg.provider {
        IdpProfile::Oidc => token.extra_fields().id_token.clone(),
        IdpProfile::Cognito => None,
    };
    let session = Session { bearer, expires_at, obtained_at, via_reauth: pending.reauth, id_token_hint };
    storage::session_set_json(SESSION_KEY, &session);
    SESSION.with(|s| *s.borrow_mut() = Some(session));
    Ok(safe_return(&pending.return_to))
}

fn load_session() -> Option<Session> {
    storage::session_get_json(SESSION_KEY)
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

/// Reads a JWT payload without verifying it: for display only.
fn claims(token: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    // From text, as every other JSON the app reads: one instance of the parser (oauth2 has its own).
    serde_json::from_str(std::str::from_utf8(&bytes).ok()?).ok()
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

    #[test]
    fn return_targets_stay_on_this_origin() {
        assert_eq!(safe_return("/a/abc"), "/a/abc");
        assert_eq!(safe_return("/?tab=decided"), "/?tab=decided");
        assert_eq!(safe_return("//evil.example"), "/");
        assert_eq!(safe_return("https://evil.example/"), "/");
        assert_eq!(safe_return("/\\evil.example"), "/");
        assert_eq!(safe_return("/auth/callback?code=x"), "/");
    }

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

    /// The record exactly as app/boot.js `startSignIn` writes it (the browser test drives the writer).
    #[test]
    fn reads_the_pending_sign_in_that_boot_js_writes() {
        let written =
            r#"{"state":"s-16","verifier":"v-43","returnTo":"/a/abc","createdAt":1764570000000,"reauth":true}"#;
        let p: Pending = serde_json::from_str(written).unwrap();
        assert_eq!((p.state.as_str(), p.verifier.as_str(), p.return_to.as_str()), ("s-16", "v-43", "/a/abc"));
        assert_eq!((p.created_at, p.reauth), (1_764_570_000_000.0, true));
        // A record of an older boot.js without `reauth` still completes.
        let old: Pending =
            serde_json::from_str(r#"{"state":"s","verifier":"v","returnTo":"/","createdAt":1}"#).unwrap();
        assert!(!old.reauth);
    }
}
