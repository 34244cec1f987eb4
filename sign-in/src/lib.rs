//! Sign-in with the provider's hosted page: authorization code + PKCE (S256), its callback and the session it
//! leaves in the tab.
//!
//! app/boot.js starts every sign-in (state, verifier and challenge with Web Crypto, the pending record) and, on
//! `/auth/callback`, takes `code`/`state` out of the address bar and loads this crate's binary: a wasm module of its
//! own, far smaller than the app, which exchanges the code with the `oauth2` crate ([`callback::complete`]) while
//! the app is still downloading. The app links the library for the record it reads ([`session::Session`]) and the
//! failures it explains ([`SignInFailure`]); the exchange itself is never in the app's module.

pub mod callback;
mod http;
pub mod json;
pub mod session;

use ringi_core::base::json::{FromJson, Members, ReadError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a callback did not complete a sign-in: what the module answers, which the app explains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "camelCase")]
pub enum SignInFailure {
    /// `/auth/callback` opened without a sign-in of this tab in flight (reload, bookmark, other tab).
    NoPendingSignIn,
    /// `state` missing or different from the stored one: not this tab's sign-in.
    StateMismatch,
    /// The provider redirected back with `error=…`, or without a code, or too late.
    Provider(String),
    /// The token endpoint refused the code or could not be reached.
    Token(String),
    /// The configuration the module was given is not one it can use.
    Config(String),
}

/// As serde writes it (`{"kind": …, "detail": …}`): what the app reads from the module's answer.
impl FromJson for SignInFailure {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        let (kind, detail): (String, Option<String>) = (m.get("kind"), m.get("detail"));
        let detail = || detail.clone().ok_or_else(|| ReadError::new("missing field `detail`"));
        let failure = match kind.as_str() {
            "noPendingSignIn" => Self::NoPendingSignIn,
            "stateMismatch" => Self::StateMismatch,
            "provider" => Self::Provider(detail()?),
            "token" => Self::Token(detail()?),
            "config" => Self::Config(detail()?),
            other => return Err(ReadError::new(format!("unknown sign-in failure `{other}`"))),
        };
        m.done(failure)
    }
}

impl std::fmt::Display for SignInFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignInFailure::NoPendingSignIn => write!(f, "no sign-in of this tab is in progress"),
            SignInFailure::StateMismatch => {
                write!(f, "the sign-in response does not match this tab's request (state)")
            }
            SignInFailure::Provider(e) => write!(f, "the sign-in service answered: {e}"),
            SignInFailure::Token(e) => write!(f, "token request failed: {e}"),
            SignInFailure::Config(e) => write!(f, "configuration: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_crosses_to_the_app_as_json_and_back() {
        for failure in [SignInFailure::StateMismatch, SignInFailure::Token("invalid_grant".into())] {
            let text = serde_json::to_string(&failure).unwrap();
            assert_eq!(serde_json::from_str::<SignInFailure>(&text).unwrap(), failure);
            assert_eq!(json::from_str::<SignInFailure>(&text).unwrap(), failure);
        }
        for text in
            [r#"{"kind":"token"}"#, r#"{"kind":"other"}"#, r#"{"detail":"x"}"#, r#"{"kind":"config","detail":1}"#]
        {
            assert!(serde_json::from_str::<SignInFailure>(text).is_err(), "{text}");
            assert!(json::from_str::<SignInFailure>(text).is_err(), "{text}");
        }
        assert_eq!(serde_json::to_string(&SignInFailure::NoPendingSignIn).unwrap(), r#"{"kind":"noPendingSignIn"}"#);
    }
}
