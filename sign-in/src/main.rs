//! The module app/boot.js loads on `/auth/callback`: the code exchange, without the app. Its one export,
//! `complete`, runs [`ringi_sign_in::callback::complete`] and answers the page to go to, or a
//! [`ringi_sign_in::SignInFailure`] as JSON.

use ringi_core::api::wire::SpaConfig;
use ringi_core::base::json;
use ringi_sign_in::callback;
use ringi_sign_in::SignInFailure;
use wasm_bindgen::prelude::wasm_bindgen;

fn main() {}

/// `config`: the page's configuration (JSON, as embedded or from `/config.json`); `search`: the callback's query,
/// which boot.js took out of the address bar before anything else ran.
#[wasm_bindgen]
pub async fn complete(config: String, search: String) -> Result<String, String> {
    let failed = |f: SignInFailure| serde_json::to_string(&f).unwrap_or_default();
    let cfg: SpaConfig =
        json::from_str(&config).map_err(|e| failed(SignInFailure::Config(format!("unreadable: {e}"))))?;
    callback::complete(&cfg, &search, js_sys::Date::now()).await.map_err(failed)
}
