//! The callback (`/auth/callback?code&state`): checks it against this tab's pending sign-in and exchanges the code
//! with the `oauth2` crate, whose token request goes through [`GlooHttp`] (oauth2's async HTTP client trait on the
//! browser's `fetch`).
//!
//! `state` is a fresh random value per sign-in, stored in sessionStorage with the PKCE verifier and the page to
//! come back to (`/a/{id}` for a short link opened signed-out): the state is the key of that record ([`Pending`],
//! written by boot.js `startSignIn`), so only this tab's own sign-in can complete, and it lands where the user was
//! going. The record is single use.

use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    AuthorizationCode, Client, ClientId, CsrfToken, EndpointNotSet, EndpointSet, ExtraTokenFields, PkceCodeVerifier,
    RedirectUrl, RequestTokenError, StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use ringi_core::adapters::idp::{IdpProfile, TokenUse};
use ringi_core::api::wire::SpaConfig;
use ringi_core::base::json::{FromJson, Members, ReadError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::GlooHttp;
use crate::session::{self, Session, PENDING_KEY, SESSION_KEY};
use crate::SignInFailure;

pub use ringi_core::base::sign_in::CALLBACK_PATH;
/// A sign-in older than this cannot be completed (Cognito codes live 5 minutes).
const PENDING_MAX_AGE_MS: f64 = 15.0 * 60_000.0;

/// The OpenID Connect part of the token response, next to oauth2's standard fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct IdTokenField {
    #[serde(default)]
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

/// oauth2's basic client with the ID token kept, only the token endpoint set: the authorize URL is built by
/// app/boot.js, which starts every sign-in.
type OauthClient = Client<
    BasicErrorResponse,
    StandardTokenResponse<IdTokenField, BasicTokenType>,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// One sign-in in flight, keyed by its `state`: the record app/boot.js `startSignIn` writes.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    state: String,
    verifier: String,
    return_to: String,
    created_at: f64,
    #[serde(default)]
    reauth: bool,
}

impl FromJson for Pending {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            state: m.get("state"),
            verifier: m.get("verifier"),
            return_to: m.get("returnTo"),
            created_at: m.get("createdAt"),
            reauth: m.or_default("reauth"),
        })
    }
}

/// What the provider put in the callback's query.
#[derive(Debug, Default, PartialEq)]
struct Params {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

impl Params {
    /// `search`: the callback's query as boot.js took it from the address bar (`?code=…&state=…`).
    fn parse(search: &str) -> Self {
        let mut params = Params::default();
        for (name, value) in form_urlencoded::parse(search.trim_start_matches('?').as_bytes()) {
            let slot = match &*name {
                "code" => &mut params.code,
                "state" => &mut params.state,
                "error" => &mut params.error,
                "error_description" => &mut params.error_description,
                _ => continue,
            };
            slot.get_or_insert_with(|| value.into_owned());
        }
        params
    }
}

/// Only same-origin paths are followed after sign-in (no `//host`, no scheme, never the callback itself).
pub fn safe_return(path: &str) -> String {
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

fn client(cfg: &SpaConfig) -> Result<OauthClient, SignInFailure> {
    let bad = |e: oauth2::url::ParseError| SignInFailure::Config(e.to_string());
    // The worker's configuration names the endpoint: below the Hosted UI domain (Cognito) or from the issuer's
    // discovery document (OIDC), so the browser never fetches that document itself.
    Ok(Client::new(ClientId::new(cfg.client_id.clone()))
        .set_token_uri(TokenUrl::new(cfg.token_endpoint.clone()).map_err(bad)?)
        .set_redirect_uri(RedirectUrl::new(cfg.redirect_uri.clone()).map_err(bad)?))
}

/// Completes this tab's sign-in from the callback's query: checks `state`, exchanges the code (with the PKCE
/// verifier) and keeps the session. Returns the page to go to.
pub async fn complete(cfg: &SpaConfig, search: &str, now_ms: f64) -> Result<String, SignInFailure> {
    let params = Params::parse(search);
    // Single use: whatever happens next, this sign-in cannot be completed twice.
    let pending: Option<Pending> = session::get_json(PENDING_KEY);
    session::remove(PENDING_KEY);
    let pending = pending.ok_or(SignInFailure::NoPendingSignIn)?;
    let expected = CsrfToken::new(pending.state);
    let state_ok = params
        .state
        .as_deref()
        .is_some_and(|got| ringi_core::base::hex::constant_time_eq(got.as_bytes(), expected.secret().as_bytes()));
    if !state_ok {
        return Err(SignInFailure::StateMismatch);
    }
    if let Some(error) = params.error {
        let detail = params.error_description.map(|d| format!("{error}: {d}")).unwrap_or(error);
        return Err(SignInFailure::Provider(detail));
    }
    if now_ms - pending.created_at > PENDING_MAX_AGE_MS {
        return Err(SignInFailure::Provider("the sign-in took too long".into()));
    }
    let code = params.code.ok_or_else(|| SignInFailure::Provider("no authorization code".into()))?;
    let token = client(cfg)?
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(&GlooHttp)
        .await
        .map_err(|e| {
            SignInFailure::Token(match e {
                RequestTokenError::ServerResponse(r) => r.to_string(),
                other => other.to_string(),
            })
        })?;
    let id_token = token.extra_fields().id_token.clone();
    let bearer = match cfg.token_use {
        TokenUse::Access => token.access_token().secret().clone(),
        TokenUse::Id => {
            id_token.clone().ok_or_else(|| SignInFailure::Token("the sign-in service returned no ID token".into()))?
        }
    };
    // Relative lifetimes (`expires_in`, the bearer's own `exp - iat`), so a wrong device clock does not matter;
    // the worker checks `exp` itself and a 401 signs in again anyway.
    let ttl_ms = [
        token.expires_in().map(|d| d.as_millis() as f64),
        session::claims(&bearer).and_then(|c| Some((c.get("exp")?.as_f64()? - c.get("iat")?.as_f64()?) * 1000.0)),
    ]
    .into_iter()
    .flatten()
    .fold(None, |min: Option<f64>, t| Some(min.map_or(t, |m| m.min(t))))
    .unwrap_or(3_600_000.0);
    // The ID token is kept as the sign-out's `id_token_hint` (some providers, Okta among them, require it).
    let id_token_hint = match cfg.provider {
        IdpProfile::Oidc => id_token,
        IdpProfile::Cognito => None,
    };
    let kept =
        Session { bearer, expires_at: now_ms + ttl_ms, obtained_at: now_ms, via_reauth: pending.reauth, id_token_hint };
    session::set_json(SESSION_KEY, &kept);
    Ok(safe_return(&pending.return_to))
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

    #[test]
    fn reads_the_callbacks_query_as_the_provider_writes_it() {
        let p = Params::parse("?code=c%2B1&state=s-16&extra=x");
        assert_eq!(p, Params { code: Some("c+1".into()), state: Some("s-16".into()), ..Params::default() });
        let e = Params::parse("?error=access_denied&error_description=User+cancelled&state=s");
        assert_eq!(e.error.as_deref(), Some("access_denied"));
        assert_eq!(e.error_description.as_deref(), Some("User cancelled"));
        // A repeated parameter is read once, the first: a later one cannot replace the state that was checked.
        assert_eq!(Params::parse("state=a&state=b").state.as_deref(), Some("a"));
        assert_eq!(Params::parse(""), Params::default());
    }

    /// The record exactly as app/boot.js `startSignIn` writes it (the browser test drives the writer).
    #[test]
    fn reads_the_pending_sign_in_that_boot_js_writes() {
        let written =
            r#"{"state":"s-16","verifier":"v-43","returnTo":"/a/abc","createdAt":1764570000000,"reauth":true}"#;
        let p: Pending = crate::json::from_str(written).unwrap();
        ringi_core::base::json::agrees::<Pending>(serde_json::from_str(written).unwrap());
        assert_eq!((p.state.as_str(), p.verifier.as_str(), p.return_to.as_str()), ("s-16", "v-43", "/a/abc"));
        assert_eq!((p.created_at, p.reauth), (1_764_570_000_000.0, true));
        // A record of an older boot.js without `reauth` still completes.
        let old: Pending =
            crate::json::from_str(r#"{"state":"s","verifier":"v","returnTo":"/","createdAt":1}"#).unwrap();
        assert!(!old.reauth);
    }
}
