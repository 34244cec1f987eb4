//! The runtime configuration the worker embeds in the HTML and also serves at `/config.json` (design §11, §13:
//! `COGNITO_DOMAIN`, `COGNITO_CLIENT_ID`, `COGNITO_ISSUER`, `PUBLIC_BASE_URL`, …). Nothing in it is secret.
//! The shape is `ringi_core::api::wire::SpaConfig`, shared with the worker.

use gloo_net::http::Request;
pub use ringi_core::api::wire::SpaConfig;
use ringi_core::base::locale::Locale;
use ringi_sign_in::json;
use web_sys::RequestCache;

/// Where the SPA fetches its configuration. Absolute: the SPA is served from the origin root, and deep links
/// (`/a/{id}`) must not turn it into `/a/config.json`.
pub const CONFIG_URL: &str = "/config.json";

pub(crate) const LOCALE_PREF: &str = "ringi.locale";

/// The language the user chose in the header earlier (a UI preference in localStorage).
pub fn saved_locale() -> Option<Locale> {
    crate::infra::storage::pref_get(LOCALE_PREF).and_then(|t| Locale::from_tag(&t))
}

pub fn save_locale(locale: Locale) {
    crate::infra::storage::pref_set(LOCALE_PREF, locale.as_str());
}

/// The first of the browser's languages that the UI speaks, if any.
pub fn browser_locale() -> Option<Locale> {
    let languages = web_sys::window()
        .map(|w| w.navigator().languages())
        .map(|list| list.iter().filter_map(|v| v.as_string()).collect::<Vec<_>>())
        .unwrap_or_default();
    languages.iter().find_map(|tag| Locale::from_tag(tag))
}

/// The language the header's switch offers: the other one.
pub fn other_locale(locale: Locale) -> Locale {
    match locale {
        Locale::En => Locale::Ja,
        Locale::Ja => Locale::En,
    }
}

/// The UI language of a configuration (`defaultLocale`): `"en"` or `"ja"` (also as `ja-JP`), anything else
/// English.
pub fn default_locale(cfg: &SpaConfig) -> Locale {
    Locale::from_tag(&cfg.default_locale).unwrap_or_default()
}

/// The UI language: the one chosen in the header earlier, else the browser's, else the configured default.
pub fn ui_locale(cfg: Option<&SpaConfig>) -> Locale {
    saved_locale().or_else(browser_locale).or_else(|| cfg.map(default_locale)).unwrap_or_default()
}

/// Why the configuration could not be used. Rendered as a one-line technical detail under the
/// user-facing message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Network failure, blocked request, …
    Network(String),
    /// The server answered with a non-2xx status.
    Status(u16),
    /// The body was not the expected JSON.
    Invalid(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Network(e) => write!(f, "{CONFIG_URL}: network error: {e}"),
            ConfigError::Status(code) => write!(f, "{CONFIG_URL}: HTTP {code}"),
            ConfigError::Invalid(e) => write!(f, "{CONFIG_URL}: invalid configuration: {e}"),
        }
    }
}

/// The configuration the worker embedded in the page (`<script type="application/json" id="ringi-config">`,
/// never executed): no request before the app can route. `None` when the page has none (then [`load`]).
pub fn embedded() -> Option<SpaConfig> {
    let element = leptos::prelude::document().get_element_by_id(ringi_core::adapters::assets::CONFIG_ELEMENT_ID)?;
    let text = element.text_content()?;
    match json::from_str(&text) {
        Ok(cfg) => Some(cfg),
        Err(e) => {
            leptos::logging::warn!("ringi: embedded configuration: {e}; asking {CONFIG_URL}");
            None
        }
    }
}

/// Fetches and decodes `/config.json`. `no-cache`: the browser may keep a copy but must revalidate it, so a
/// redeploy (new version, new client id) is picked up on the next load.
pub async fn load() -> Result<SpaConfig, ConfigError> {
    let response = Request::get(CONFIG_URL)
        .cache(RequestCache::NoCache)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| ConfigError::Network(e.to_string()))?;
    if !response.ok() {
        return Err(ConfigError::Status(response.status()));
    }
    let text = response.text().await.map_err(|e| ConfigError::Network(e.to_string()))?;
    json::from_str(&text).map_err(|e| ConfigError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_documented_shape() {
        let json = r#"{"cognitoDomain":"https://auth.example.com","clientId":"abc","redirectUri":"https://ringi.example.com/callback","issuer":"https://cognito-idp.ap-northeast-1.amazonaws.com/ap-northeast-1_X","tokenUse":"access","defaultLocale":"ja","version":"0.1.0","provider":"cognito","authorizationEndpoint":"https://auth.example.com/oauth2/authorize","tokenEndpoint":"https://auth.example.com/oauth2/token","endSessionEndpoint":"https://auth.example.com/logout","scope":"openid email profile","groupsClaim":"cognito:groups"}"#;
        let cfg: SpaConfig = json::from_str(json).unwrap();
        assert_eq!(default_locale(&cfg), Locale::Ja);
        assert_eq!(cfg.client_id, "abc");
        assert_eq!(serde_json::to_string(&cfg).unwrap(), json);
    }

    #[test]
    fn missing_field_is_an_error() {
        let json = r#"{"cognitoDomain":"d","redirectUri":"r","issuer":"i","defaultLocale":"en","version":"v"}"#;
        let err = json::from_str::<SpaConfig>(json).unwrap_err().to_string();
        assert!(err.contains("clientId"), "{err}");
    }
}
