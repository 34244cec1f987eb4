//! How a person signed in, as their verified token says (`auth_time`, `acr`, `amr`), and the sign-in an
//! approval asks of its deciders (`requireSignIn`). Value types only: the rule is `crate::domain::step_up`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::json::{FromJson, Members, ReadError};

/// Where the provider sends a sign-in back (the SPA's `redirect_uri`, below the public base URL).
pub const CALLBACK_PATH: &str = "/auth/callback";

/// The sign-in claims of a verified token. Each is absent when the token does not carry it (or carries it in
/// a shape no provider uses): an absent claim proves nothing, so a requirement on it is not met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignIn {
    /// `auth_time`: when the person last authenticated with the provider (Unix seconds).
    pub auth_time: Option<i64>,
    /// `acr`: the authentication context class the sign-in satisfied.
    pub acr: Option<String>,
    /// `amr`: the authentication methods used (RFC 8176: `pwd`, `otp`, `mfa`, `hwk`, …).
    pub amr: Vec<String>,
    /// `acrs`: the authentication contexts the sign-in satisfied (Entra ID's Conditional Access, `c1`–`c99`),
    /// Entra's way of saying what other providers say in `acr`.
    pub contexts: Vec<String>,
}

/// What an approval asks of the sign-in of whoever decides it; stored with the approval, shown by its GET and
/// carried by a `step_up_required` error. At least one member is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInRequirement {
    /// The sign-in may be at most this old (seconds; OpenID Connect's `max_age`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<u32>,
    /// The token's `acr`, or one of its `acrs` (Entra ID), must be one of these (OpenID Connect's `acr_values`, in
    /// order of preference).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acr: Vec<String>,
    /// The token's `amr` must show a second factor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mfa: bool,
}

impl FromJson for SignInRequirement {
    fn from_json(v: &Value) -> Result<Self, ReadError> {
        let m = Members::of(v)?;
        m.done(Self {
            max_age_seconds: m.or_default("maxAgeSeconds"),
            acr: m.or_default("acr"),
            mfa: m.or_default("mfa"),
        })
    }
}
